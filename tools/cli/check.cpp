// `nnops check <operator>`: fills the inputs with seeded random values, runs the operator, compares every
// output element with the float64 reference under the SPEC.md 4 bound (the operators' own verify()
// functions, the ones the unit tests use), and runs it again on one thread to confirm the result does not
// depend on the thread count. Prints one row per dtype and PASS/FAIL; exit 1 on any FAIL.
#include "tools/cli/check.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "nnops/nnops.hpp"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"
#include "tools/cli/cli_util.hpp"

namespace nnops::cli {
namespace {

struct CheckCommon {
  std::vector<std::string> dtypes;
  std::vector<int64_t> shape;
  uint64_t seed = 1;
  int threads = 0;
};

void add_common(CLI::App* c, CheckCommon* o, const std::string& default_shape) {
  c->add_option("--dtype", o->dtypes, "float32, float16, bfloat16 (several allowed; default: all three)")
      ->delimiter(',')
      ->type_name("DTYPE")
      ->check(CLI::Validator(
          [](std::string& s) { return parse_dtype(s) ? std::string() : "unknown dtype '" + s + "'"; }, ""));
  c->add_option("--shape", o->shape, "Dims, outermost first, e.g. " + default_shape + " (the default)")
      ->delimiter(',')
      ->type_name("D0,D1,...")
      ->check(CLI::Validator(
          [](std::string& s) { return s.rfind('-', 0) == 0 ? "dimension " + s + " is negative" : std::string(); }, ""));
  c->add_option("--seed", o->seed, "Seed of the random inputs (default 1)");
  c->add_option("--threads", o->threads, "Threads (default: NNOPS_NUM_THREADS or all cores)")
      ->check(CLI::Range(0, 4096));
}

std::vector<DType> chosen_dtypes(const CheckCommon& o) {
  if (o.dtypes.empty()) return {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  std::vector<DType> v;
  for (const std::string& s : o.dtypes) v.push_back(*parse_dtype(s));
  return v;
}

int usage(const std::string& msg) {
  std::fprintf(stderr, "nnops: usage error: %s\n", msg.c_str());
  return 2;
}

// Element count of the shape, or -1 when it overflows; *bytes_ok is false when `buffers` float32 buffers
// of it would not fit in this machine's memory (HostBuffer cannot report a failed allocation).
int64_t checked_numel(const std::vector<int64_t>& shape, int buffers, bool* bytes_ok) {
  int64_t n = 1, bytes = 0;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  }
  if (__builtin_mul_overflow(n, int64_t{4} * buffers, &bytes)) return -1;
  const double phys = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  *bytes_ok = phys <= 0 || static_cast<double>(bytes) < 0.8 * phys;
  return n;
}

struct Row {
  std::string error;  // the operator's own error, if the call failed
  detail::VerifyReport report;
  int threads = 1;
  bool deterministic = true;
  bool pass() const { return error.empty() && report.pass() && deterministic; }
};

void print_header(const char* op, const std::vector<int64_t>& shape, const CheckCommon& o, const std::string& extra) {
  std::printf("nnops check %s: shape %s, seed %llu, %d thread(s), SIMD %s%s\n", op, shape_string(shape).c_str(),
              static_cast<unsigned long long>(o.seed), resolve_num_threads(Context{o.threads}), current_isa().c_str(),
              extra.c_str());
  std::printf("  %-9s %12s %11s %11s %11s %11s  %-21s %s\n", "dtype", "compared", "max |err|", "err/bound", "err",
              "bound", "same with 1 thread", "result");
}

void print_row(DType t, const Row& r) {
  if (!r.error.empty()) {
    std::printf("  %-9s FAIL: %s\n", dtype_name(t), r.error.c_str());
    return;
  }
  // err and bound are those of the element closest to (or furthest past) its bound.
  std::printf(
      "  %-9s %12lld %11.3g %11.3g %11.3g %11.3g  %-21s %s\n", dtype_name(t), static_cast<long long>(r.report.checked),
      r.report.max_abs_err, r.report.worst_ratio, r.report.err_at_worst, r.report.bound_at_worst,
      r.threads == 1 ? "n/a (1 thread)" : (r.deterministic ? "bitwise" : "DIFFERS"), r.pass() ? "PASS" : "FAIL");
  if (r.report.failures) {
    std::printf("            %lld element(s) outside the bound\n", static_cast<long long>(r.report.failures));
  }
  std::fflush(stdout);
}

int summarize(int failures, int total) {
  std::printf("%s: %d of %d passed\n", failures ? "FAIL" : "PASS", total - failures, total);
  return failures ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------------

struct GnCheck {
  CheckCommon common;
  bool stats_like_x = false;
};

Row check_gn_one(DType t, DType st, const std::vector<int64_t>& shape, const CheckCommon& o) {
  Row row;
  HostBuffer x(t, shape), dy(t, shape), gamma(t, shape), dx(t, shape), dx1(t, shape);
  const std::vector<int64_t> ng = {shape[0], shape[1]};
  HostBuffer mean(st, ng), rstd(st, ng);
  fill_uniform(x, o.seed * 8 + 1, -2.0f, 2.0f);
  fill_uniform(dy, o.seed * 8 + 2, -1.0f, 1.0f);
  fill_uniform(gamma, o.seed * 8 + 3, 0.5f, 1.5f);
  fill_group_stats(x, mean, rstd);
  const Context ctx{o.threads};
  row.threads = resolve_num_threads(ctx);
  if (Status s = group_normalization_grad(x.view(), dy.view(), gamma.view(), mean.view(), rstd.view(), dx.view(), ctx);
      !s) {
    row.error = s.message();
    return row;
  }
  row.report = gn_grad::verify(x, dy, gamma, mean, rstd, dx, 1);
  if (row.threads > 1) {
    if (Status s = group_normalization_grad(x.view(), dy.view(), gamma.view(), mean.view(), rstd.view(), dx1.view(),
                                            Context{1});
        !s) {
      row.error = s.message();
      return row;
    }
    row.deterministic = dx.same_bytes(dx1);
  }
  return row;
}

int check_group_normalization_grad(const GnCheck& o) {
  const std::vector<int64_t> shape = o.common.shape.empty() ? std::vector<int64_t>{2, 8, 3, 33, 35} : o.common.shape;
  if (shape.size() < 3 || shape.size() > static_cast<std::size_t>(kMaxRank)) {
    return usage("group_normalization_grad: --shape " + shape_string(shape) + " has rank " +
                 std::to_string(shape.size()) + "; expected 3 to " + std::to_string(kMaxRank) + ": [N, G, d2, ...]");
  }
  bool fits = true;
  if (checked_numel(shape, 5, &fits) < 0 || !fits || checked_numel({shape[0], shape[1]}, 2, &fits) < 0 || !fits) {
    return usage("group_normalization_grad: --shape " + shape_string(shape) + " is too large for this machine");
  }
  print_header(gn_grad::kOpName, shape, o.common, o.stats_like_x ? ", mean/rstd in x's dtype" : ", mean/rstd float32");
  int failures = 0, total = 0;
  for (DType t : chosen_dtypes(o.common)) {
    const Row r = check_gn_one(t, o.stats_like_x ? t : DType::kFloat32, shape, o.common);
    print_row(t, r);
    failures += !r.pass();
    ++total;
  }
  return summarize(failures, total);
}

void add_check_group_normalization_grad(CLI::App* check, std::vector<Subcommand>* out) {
  auto o = std::make_shared<GnCheck>();
  CLI::App* c =
      check->add_subcommand("group_normalization_grad",
                            "Random x, dy, gamma (mean and rstd computed from x); dx against the float64 reference: "
                            "|dx - ref| <= ulp(ref) + 8 * 2^-24 * scale (SPEC.md 4)");
  add_common(c, &o->common, "2,8,3,33,35");
  c->add_flag("--stats-like-x", o->stats_like_x, "mean and rstd in x's dtype instead of float32");
  c->footer(
      "Example:\n"
      "  nnops check group_normalization_grad --dtype bfloat16 --shape 4,32,16,64 --seed 7\n"
      "Exit status: 0 every dtype passed, 1 a FAIL (or an operator error), 2 usage error.");
  out->push_back({c, [o] { return check_group_normalization_grad(*o); }});
}

// ---------------------------------------------------------------------------------------------------

struct PsCheck {
  CheckCommon common;
  double lr = 1e-3, logbase = 1.0, sign_decay = 0.99, beta = 0.9;
};

Row check_ps_one(DType t, const std::vector<int64_t>& shape, const PsCheck& o) {
  Row row;
  HostBuffer var0(t, shape), m0(t, shape), grad(t, shape);
  HostBuffer lr(t, {}), logbase(t, {}), sign_decay(t, {}), beta(t, {});
  fill_uniform(var0, o.common.seed * 8 + 4, -1.0f, 1.0f);
  fill_uniform(m0, o.common.seed * 8 + 5, -1e-2f, 1e-2f);
  fill_uniform(grad, o.common.seed * 8 + 6, -1e-2f, 1e-2f);
  lr.set(0, o.lr);
  logbase.set(0, o.logbase);
  sign_decay.set(0, o.sign_decay);
  beta.set(0, o.beta);
  HostBuffer var = var0.clone(), m = m0.clone();
  const Context ctx{o.common.threads};
  row.threads = resolve_num_threads(ctx);
  auto call = [&](const HostBuffer& v, const HostBuffer& mm, const Context& c) {
    return inplace_apply_power_sign(v.view(), mm.view(), lr.view(), logbase.view(), sign_decay.view(), beta.view(),
                                    grad.view(), false, c);
  };
  if (Status s = call(var, m, ctx); !s) {
    row.error = s.message();
    return row;
  }
  const power_sign::Scalars sc{lr.get(0), logbase.get(0), sign_decay.get(0), beta.get(0)};
  row.report = power_sign::verify(sc, var0, m0, grad, var, m, 1);
  if (row.threads > 1) {
    HostBuffer var1 = var0.clone(), m1 = m0.clone();
    if (Status s = call(var1, m1, Context{1}); !s) {
      row.error = s.message();
      return row;
    }
    row.deterministic = var.same_bytes(var1) && m.same_bytes(m1);
  }
  return row;
}

int check_inplace_apply_power_sign(const PsCheck& o) {
  const std::vector<int64_t> shape = o.common.shape.empty() ? std::vector<int64_t>{100003} : o.common.shape;
  if (shape.size() > static_cast<std::size_t>(kMaxRank)) {
    return usage("inplace_apply_power_sign: --shape " + shape_string(shape) + " has rank " +
                 std::to_string(shape.size()) + "; expected at most " + std::to_string(kMaxRank));
  }
  bool fits = true;
  if (checked_numel(shape, 7, &fits) < 0 || !fits) {
    return usage("inplace_apply_power_sign: --shape " + shape_string(shape) + " is too large for this machine");
  }
  char extra[160];
  std::snprintf(extra, sizeof extra, ", lr %g, logbase %g, sign_decay %g, beta %g", o.lr, o.logbase, o.sign_decay,
                o.beta);
  print_header(power_sign::kOpName, shape, o.common, extra);
  int failures = 0, total = 0;
  for (DType t : chosen_dtypes(o.common)) {
    const Row r = check_ps_one(t, shape, o);
    print_row(t, r);
    failures += !r.pass();
    ++total;
  }
  return summarize(failures, total);
}

void add_check_inplace_apply_power_sign(CLI::App* check, std::vector<Subcommand>* out) {
  auto o = std::make_shared<PsCheck>();
  CLI::App* c = check->add_subcommand(
      "inplace_apply_power_sign",
      "Random var, m, grad; one step against the float64 reference: var and m within 1 ulp of T (SPEC.md 4)");
  add_common(c, &o->common, "100003");
  c->add_option("--lr", o->lr, "Learning rate (default 0.001), rounded to the dtype");
  c->add_option("--logbase", o->logbase, "Log base (default 1)");
  c->add_option("--sign-decay,--sign_decay", o->sign_decay, "Sign decay (default 0.99)");
  c->add_option("--beta", o->beta, "Momentum decay in [0, 1) (default 0.9)");
  c->footer(
      "Example:\n"
      "  nnops check inplace_apply_power_sign --dtype float16 --shape 1000000 --seed 3\n"
      "Exit status: 0 every dtype passed, 1 a FAIL (or an operator error), 2 usage error.");
  out->push_back({c, [o] { return check_inplace_apply_power_sign(*o); }});
}

}  // namespace

void add_check_subcommands(CLI::App* check_cmd, std::vector<Subcommand>* out) {
#define NNOPS_OP(name, category, op_type) add_check_##name(check_cmd, out);
#include "src/ops/op_list.inc"
#undef NNOPS_OP
}

}  // namespace nnops::cli
