// `nnops demo`: every operator of the descriptor list in float32, float16 and bfloat16 on realistic work;
// each result checked against the float64 reference (on a sample of groups / elements), timed, and reported
// as one table row.
#include "tools/cli/demo.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/ops/op_desc.hpp"
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

Row demo_one(const ops::OpDesc& d, DType t, bool quick, const Context& ctx, int iters) {
  Row row;
  row.op = d.name;
  row.dtype = dtype_name(t);
  ops::ProblemSpec spec;
  spec.dtype = t;
  spec.shape = quick ? d.demo_quick_shape : d.demo_shape;
  row.shape = shape_string(spec.shape);
  const ops::Problem before = d.make_problem(spec);
  ops::Problem p = before.clone();
  const std::vector<TensorView> v = p.views();
  auto call = [&] { return ops::run_prepared(d.name, d.prepare, v.data(), p.attrs, ctx); };
  if (Status s = call(); !s) {
    row.error = s.message();
    return row;
  }
  // Every 16th group (or element) of these large problems.
  row.report = d.verify(before, p, 16);
  row.seconds = median(time_calls(iters, [&] { (void)call(); }));
  row.bytes = d.bytes(p);
  return row;
}

}  // namespace

int run_demo(const DemoOptions& o) {
  const Context ctx{o.threads};
  std::printf("nnops %s demo: SIMD target %s, %d thread(s); errors against the float64 reference "
              "(docs/semantics.md)\n",
              version(), current_isa().c_str(), resolve_num_threads(ctx));
  print_header();
  int failures = 0, total = 0;
  for (const ops::OpDesc* d : ops::all_ops()) {
    for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      const Row r = demo_one(*d, t, o.quick, ctx, o.iters);
      print_row(r);
      failures += !r.pass();
      ++total;
    }
  }
  std::printf("%s: %d of %d cases passed\n", failures ? "FAIL" : "PASS", total - failures, total);
  return failures ? 1 : 0;
}

}  // namespace nnops::cli
