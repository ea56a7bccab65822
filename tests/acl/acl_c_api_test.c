/*
 * The C API from C (built as C99 with -Wall -Wextra -Wpedantic -Werror): every public C header compiles
 * as C, and a program drives both operators through init, device memory, tensors, both phases, a stream
 * and the error paths. Prints [PASS] or [FAIL].
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"
#include "aclnn_group_normalization_grad.h"
#include "aclnn_inplace_apply_power_sign.h"
#include "aclnnop/aclnn_group_normalization_grad.h"
#include "aclnnop/aclnn_inplace_apply_power_sign.h"

static int failures = 0;

#define EXPECT(cond)                                                                        \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      printf("%s:%d: expected %s (%s)\n", __FILE__, __LINE__, #cond, aclGetRecentErrMsg()); \
      ++failures;                                                                           \
    }                                                                                       \
  } while (0)

static void* to_device(const void* host, size_t bytes) {
  void* d = NULL;
  EXPECT(aclrtMalloc(&d, bytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
  EXPECT(aclrtMemcpy(d, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS);
  return d;
}

static aclTensor* tensor(const int64_t* shape, uint64_t rank, void* data) {
  int64_t strides[8];
  int64_t s = 1;
  int i;
  for (i = (int)rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i];
  }
  return aclCreateTensor(shape, rank, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, rank, data);
}

static double sign(double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }

static void power_sign_on_a_stream(void) {
  enum { N = 100 };
  float var[N], m[N], grad[N], out_var[N], out_m[N];
  const float lr = 0.01f, logbase = 1.0f, sign_decay = 0.5f, beta = 0.9f;
  const int64_t shape[] = {N}, one[] = {1};
  void *dv, *dm, *dg, *dlr, *dlb, *dsd, *db;
  aclTensor *tv, *tm, *tg, *tlr, *tlb, *tsd, *tb;
  aclrtStream stream = NULL;
  aclOpExecutor* executor = NULL;
  uint64_t ws = 1;
  int i;
  for (i = 0; i < N; ++i) {
    var[i] = (float)sin(0.1 * i);
    m[i] = (float)(0.1 * cos(0.2 * i));
    grad[i] = (float)sin(0.3 * i + 1.0);
  }
  dv = to_device(var, sizeof var);
  dm = to_device(m, sizeof m);
  dg = to_device(grad, sizeof grad);
  dlr = to_device(&lr, 4);
  dlb = to_device(&logbase, 4);
  dsd = to_device(&sign_decay, 4);
  db = to_device(&beta, 4);
  tv = tensor(shape, 1, dv);
  tm = tensor(shape, 1, dm);
  tg = tensor(shape, 1, dg);
  tlr = tensor(one, 1, dlr);
  tlb = tensor(one, 1, dlb);
  tsd = tensor(one, 1, dsd);
  tb = tensor(one, 1, db);

  /* Error paths first: a null argument, then a rejected value. */
  EXPECT(aclnnInplaceApplyPowerSignGetWorkspaceSize(tv, tm, tlr, tlb, NULL, tb, tg, false, &ws, &executor) ==
         ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(strcmp(aclGetRecentErrMsg(), "aclnnInplaceApplyPowerSignGetWorkspaceSize: signDecay is null") == 0);
  EXPECT(executor == NULL);
  EXPECT(aclnnInplaceApplyPowerSignGetWorkspaceSize(tv, tm, tlr, tlb, tsd, tb, tv, true, &ws, &executor) ==
         ACLNN_ERR_PARAM_INVALID);
  EXPECT(strstr(aclGetRecentErrMsg(), "overlap") != NULL);

  EXPECT(aclrtCreateStream(&stream) == ACL_SUCCESS);
  EXPECT(aclnnInplaceApplyPowerSignGetWorkspaceSize(tv, tm, tlr, tlb, tsd, tb, tg, true, &ws, &executor) ==
         ACLNN_SUCCESS);
  EXPECT(ws == 0);
  EXPECT(aclnnInplaceApplyPowerSign(NULL, ws, executor, stream) == ACLNN_SUCCESS);
  EXPECT(aclnnInplaceApplyPowerSign(NULL, ws, executor, stream) == ACLNN_ERR_PARAM_INVALID); /* runs once */
  (void)aclGetRecentErrMsg();
  EXPECT(aclrtSynchronizeStream(stream) == ACL_SUCCESS);
  EXPECT(aclrtMemcpy(out_var, sizeof out_var, dv, sizeof out_var, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS);
  EXPECT(aclrtMemcpy(out_m, sizeof out_m, dm, sizeof out_m, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS);
  for (i = 0; i < N; ++i) {
    const double mn = (double)beta * m[i] + (1.0 - (double)beta) * grad[i];
    const double vn = var[i] - (double)lr * exp((double)logbase * sign_decay * sign(mn) * sign(grad[i])) * grad[i];
    EXPECT(fabs(out_m[i] - mn) <= 1e-6 * fabs(mn) + 1e-30);
    EXPECT(fabs(out_var[i] - vn) <= 1e-6 * fabs(vn) + 1e-30);
  }
  EXPECT(aclrtDestroyStream(stream) == ACL_SUCCESS);
  EXPECT(aclDestroyTensor(tv) == ACLNN_SUCCESS && aclDestroyTensor(tm) == ACLNN_SUCCESS &&
         aclDestroyTensor(tg) == ACLNN_SUCCESS && aclDestroyTensor(tlr) == ACLNN_SUCCESS &&
         aclDestroyTensor(tlb) == ACLNN_SUCCESS && aclDestroyTensor(tsd) == ACLNN_SUCCESS &&
         aclDestroyTensor(tb) == ACLNN_SUCCESS);
  EXPECT(aclrtFree(dv) == ACL_SUCCESS && aclrtFree(dm) == ACL_SUCCESS && aclrtFree(dg) == ACL_SUCCESS &&
         aclrtFree(dlr) == ACL_SUCCESS && aclrtFree(dlb) == ACL_SUCCESS && aclrtFree(dsd) == ACL_SUCCESS &&
         aclrtFree(db) == ACL_SUCCESS);
}

static void group_norm_grad_on_the_default_stream(void) {
  enum { G = 2, M = 8 };
  float x[G * M], dy[G * M], gamma[G * M], mean[G], rstd[G], dx[G * M];
  const int64_t shape[] = {1, G, M}, stat[] = {1, G};
  aclTensor *tx, *tdy, *tgamma, *tmean, *trstd, *tdx;
  aclOpExecutor* executor = NULL;
  uint64_t ws = 0;
  int g, i;
  for (i = 0; i < G * M; ++i) {
    x[i] = (float)i / 8.0f;
    dy[i] = 0.5f - (float)(i % 3);
    gamma[i] = 1.0f;
  }
  for (g = 0; g < G; ++g) {
    mean[g] = 0.25f * (float)g;
    rstd[g] = 2.0f;
  }
  /* Ordinary host memory works too on the host device (it is just not bounds-checked). */
  tx = tensor(shape, 3, x);
  tdy = tensor(shape, 3, dy);
  tgamma = tensor(shape, 3, gamma);
  tmean = tensor(stat, 2, mean);
  trstd = tensor(stat, 2, rstd);
  tdx = tensor(shape, 3, dx);
  EXPECT(aclnnGroupNormalizationGradGetWorkspaceSize(tx, tdy, tgamma, tmean, trstd, tdx, &ws, &executor) ==
         ACLNN_SUCCESS);
  EXPECT(aclnnGroupNormalizationGrad(NULL, ws, executor, NULL) == ACLNN_SUCCESS);
  for (g = 0; g < G; ++g) {
    double s1 = 0, s2 = 0;
    for (i = 0; i < M; ++i) {
      const double xhat = ((double)x[g * M + i] - mean[g]) * rstd[g];
      s1 += dy[g * M + i];
      s2 += dy[g * M + i] * xhat;
    }
    for (i = 0; i < M; ++i) {
      const double xhat = ((double)x[g * M + i] - mean[g]) * rstd[g];
      const double ref = rstd[g] / M * (M * (double)dy[g * M + i] - s1 - xhat * s2);
      EXPECT(fabs(dx[g * M + i] - ref) <= 1e-5);
    }
  }
  aclDestroyTensor(tx);
  aclDestroyTensor(tdy);
  aclDestroyTensor(tgamma);
  aclDestroyTensor(tmean);
  aclDestroyTensor(trstd);
  aclDestroyTensor(tdx);
}

int main(void) {
  EXPECT(aclInit(NULL) == ACL_SUCCESS);
  EXPECT(aclrtSetDevice(0) == ACL_SUCCESS);
  EXPECT(aclFloat16ToFloat(aclFloatToFloat16(0.5f)) == 0.5f);
  EXPECT(aclDataTypeSize(ACL_BF16) == 2);
  power_sign_on_a_stream();
  group_norm_grad_on_the_default_stream();
  EXPECT(aclrtResetDevice(0) == ACL_SUCCESS);
  EXPECT(aclFinalize() == ACL_SUCCESS);
  printf("%s C API: %d failure(s)\n", failures == 0 ? "[PASS]" : "[FAIL]", failures);
  return failures == 0 ? 0 : 1;
}
