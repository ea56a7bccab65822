// `nnops demo`: both operators, all three dtypes, on realistic work; every result checked against the
// float64 reference (on a sample of groups / elements), timed, and reported as one table row.
#include "tools/cli/demo.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"
#include "tools/cli/cli_util.hpp"

namespace nnops::cli {
namespace {

struct Row {
  std::string op, dtype, shape;
  double seconds = 0, bytes = 0;
  detail::VerifyReport report;
  std::string error;  // non-empty when the call itself failed
  bool pass() const { return error.empty() && report.pass() && report.checked > 0; }
};

void print_header() {
  std::printf("%-26s %-9s %-22s %11s %8s %11s %11s %7s\n", "operator", "dtype", "shape", "time/call", "GB/s",
              "max |err|", "err/bound", "result");
}

void print_row(const Row& r) {
  if (!r.error.empty()) {
    std::printf("%-26s %-9s %-22s  FAIL: %s\n", r.op.c_str(), r.dtype.c_str(), r.shape.c_str(), r.error.c_str());
    return;
  }
  std::printf("%-26s %-9s %-22s %11s %8.1f %11.3g %11.3g %7s\n", r.op.c_str(), r.dtype.c_str(), r.shape.c_str(),
              format_time(r.seconds).c_str(), r.bytes / r.seconds / 1e9, r.report.max_abs_err, r.report.worst_ratio,
              r.pass() ? "PASS" : "FAIL");
  std::fflush(stdout);
}

Row demo_group_norm_grad(DType t, const std::vector<int64_t>& shape, const Context& ctx, int iters) {
  Row row;
  row.op = gn_grad::kOpName;
  row.dtype = dtype_name(t);
  row.shape = shape_string(shape);
  HostBuffer x(t, shape), dy(t, shape), gamma(t, shape), dx(t, shape);
  const int64_t groups = shape[0] * shape[1];
  HostBuffer mean(DType::kFloat32, {shape[0], shape[1]}), rstd(DType::kFloat32, {shape[0], shape[1]});
  fill_uniform(x, 1, -2.0f, 2.0f);
  fill_uniform(dy, 2, -1.0f, 1.0f);
  fill_uniform(gamma, 3, 0.5f, 1.5f);
  fill_group_stats(x, mean, rstd);
  auto call = [&] {
    return group_normalization_grad(x.view(), dy.view(), gamma.view(), mean.view(), rstd.view(), dx.view(), ctx);
  };
  if (Status s = call(); !s) {
    row.error = s.message();
    return row;
  }
  row.report = gn_grad::verify(x, dy, gamma, mean, rstd, dx, std::max<int64_t>(1, groups / 16));
  row.seconds = median(time_calls(iters, [&] { (void)call(); }));
  row.bytes = 4.0 * x.bytes() + 2.0 * mean.bytes();
  return row;
}

Row demo_power_sign(DType t, int64_t n, const Context& ctx, int iters) {
  Row row;
  row.op = power_sign::kOpName;
  row.dtype = dtype_name(t);
  row.shape = "[" + std::to_string(n) + "]";
  HostBuffer var(t, {n}), m(t, {n}), grad(t, {n});
  HostBuffer lr(t, {1}), logbase(t, {1}), sign_decay(t, {1}), beta(t, {1});
  fill_uniform(var, 4, -1.0f, 1.0f);
  fill_uniform(m, 5, -1e-2f, 1e-2f);
  fill_uniform(grad, 6, -1e-2f, 1e-2f);
  lr.set(0, 1e-3);
  logbase.set(0, 1.0);
  sign_decay.set(0, 0.99);
  beta.set(0, 0.9);
  const HostBuffer var0 = var.clone(), m0 = m.clone();
  auto call = [&] {
    return inplace_apply_power_sign(var.view(), m.view(), lr.view(), logbase.view(), sign_decay.view(), beta.view(),
                                    grad.view(), false, ctx);
  };
  if (Status s = call(); !s) {
    row.error = s.message();
    return row;
  }
  const power_sign::Scalars sc{lr.get(0), logbase.get(0), sign_decay.get(0), beta.get(0)};
  row.report = power_sign::verify(sc, var0, m0, grad, var, m, 97);
  row.seconds = median(time_calls(iters, [&] { (void)call(); }));
  row.bytes = 5.0 * var.bytes();
  return row;
}

}  // namespace

int run_demo(const DemoOptions& o) {
  const Context ctx{o.threads};
  std::printf("nnops %s demo: SIMD target %s, %d thread(s); errors against the float64 reference (SPEC.md 4)\n",
              version(), current_isa().c_str(), resolve_num_threads(ctx));
  const std::vector<int64_t> gn_shape =
      o.quick ? std::vector<int64_t>{2, 32, 4, 32, 32} : std::vector<int64_t>{8, 32, 16, 64, 64};
  const int64_t ps_n = o.quick ? 1 << 20 : 25'000'000;
  print_header();
  int failures = 0;
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const Row r = demo_group_norm_grad(t, gn_shape, ctx, o.iters);
    print_row(r);
    failures += !r.pass();
  }
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const Row r = demo_power_sign(t, ps_n, ctx, o.iters);
    print_row(r);
    failures += !r.pass();
  }
  std::printf("%s: %d of 6 cases passed\n", failures ? "FAIL" : "PASS", 6 - failures);
  return failures ? 1 : 0;
}

}  // namespace nnops::cli
