#include <cstdio>
#include <nnops/nnops.hpp>
#include <vector>

int main() {
  // One step of PowerSign on 4 float32 parameters.
  std::vector<float> var = {1, 2, 3, 4}, m = {0, 0, 0, 0}, grad = {0.5f, -0.5f, 0.25f, 0};
  float lr = 0.01f, logbase = 1.0f, sign_decay = 0.99f, beta = 0.9f;
  using nnops::DType;
  using nnops::TensorView;
  nnops::Status s = nnops::inplace_apply_power_sign(
      TensorView(var.data(), DType::kFloat32, {4}), TensorView(m.data(), DType::kFloat32, {4}),
      TensorView(&lr, DType::kFloat32, {1}), TensorView(&logbase, DType::kFloat32, {1}),
      TensorView(&sign_decay, DType::kFloat32, {1}), TensorView(&beta, DType::kFloat32, {1}),
      TensorView(grad.data(), DType::kFloat32, {4}));
  if (!s) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  std::printf("var = %g %g %g %g\n", var[0], var[1], var[2], var[3]);
}
