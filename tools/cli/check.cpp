// `nnops check <operator>`, for every operator of the descriptor list: seeded random inputs (the
// descriptor's problem generator), one call, every output element compared with the float64 reference under
// the operator's bound (the descriptor's verify, which the unit tests use too), and the same call again on
// one thread to confirm the result does not depend on the thread count. One row per dtype, PASS/FAIL; exit 1
// on any FAIL.
#include "tools/cli/check.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include "nnops/nnops.hpp"
#include "src/ops/op_desc.hpp"
#include "src/ops/problem_util.hpp"
#include "tools/cli/cli_util.hpp"

namespace nnops::cli {
namespace {

using ops::AttrKind;
using ops::OpDesc;
using ops::Role;

struct CheckState {
  std::vector<std::string> dtypes;
  std::vector<int64_t> shape;
  uint64_t seed = 1;
  int threads = 0;
  bool aux = false;
  std::vector<double> scalars;  // per tensor (scalar ones)
  std::vector<int64_t> ints;    // per attribute
  std::vector<double> reals;
  std::unique_ptr<bool[]> flags;
  std::vector<std::vector<bool>> masks;
  std::vector<bool> attr_given;
};

std::vector<DType> chosen_dtypes(const CheckState& o) {
  if (o.dtypes.empty()) return {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  std::vector<DType> v;
  for (const std::string& s : o.dtypes) v.push_back(*parse_dtype(s));
  return v;
}

int usage(const std::string& msg) {
  std::fprintf(stderr, "nnops: usage error: %s\n", msg.c_str());
  return 2;
}

// Bytes of every tensor of a call with these shapes (dtype-independent upper bound: 4 bytes per element), or
// -1 when a count overflows.
double footprint(const std::vector<std::vector<int64_t>>& shapes) {
  double total = 0;
  for (const auto& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) {
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
    }
    if (n > (int64_t{1} << 60)) return -1;
    total += 4.0 * static_cast<double>(n);
  }
  return total;
}

struct Row {
  std::string error;  // the operator's own error, if the call failed
  detail::VerifyReport report;
  int threads = 1;
  bool deterministic = true;
  bool pass() const { return error.empty() && report.pass() && deterministic; }
};

// The bytes of every tensor the call writes.
bool same_outputs(const OpDesc& d, const ops::Problem& a, const ops::Problem& b) {
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    if (d.tensors[i].role != Role::kIn && a.present[i] && !a.t[i].same_bytes(b.t[i])) return false;
  }
  return true;
}

Row check_one(const OpDesc& d, const ops::ProblemSpec& spec, const Context& ctx) {
  Row row;
  const ops::Problem before = d.make_problem(spec);
  ops::Problem after = before.clone();
  row.threads = resolve_num_threads(ctx);
  auto call = [&](ops::Problem& p, const Context& c) {
    const std::vector<TensorView> v = p.views();
    return ops::run_prepared(d.name, d.prepare, v.data(), p.attrs, c);
  };
  if (Status s = call(after, ctx); !s) {
    row.error = s.message();
    return row;
  }
  row.report = d.verify(before, after, 1);
  if (row.threads > 1) {
    ops::Problem one = before.clone();
    if (Status s = call(one, Context{1}); !s) {
      row.error = s.message();
      return row;
    }
    row.deterministic = same_outputs(d, after, one);
  }
  return row;
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

// ", mean/rstd float32" or ", mean/rstd in x's dtype"; ", lr 0.001, ..."; ", num_groups 4, ...".
std::string describe(const OpDesc& d, const ops::ProblemSpec& spec, const ops::Attrs& attrs) {
  std::string s, aux;
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    if (d.tensors[i].dtype == ops::DtypeRule::kTOrF32) aux += (aux.empty() ? "" : "/") + std::string(d.tensors[i].name);
  }
  if (!aux.empty()) s += ", " + aux + (spec.aux_like_t ? " in " + std::string(d.tensors[0].name) + "'s dtype" : " float32");
  char buf[64];
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    if (!d.tensors[i].scalar) continue;
    std::snprintf(buf, sizeof buf, ", %s %g", d.tensors[i].name, ops::scalar_value(d, spec, static_cast<int>(i)));
    s += buf;
  }
  for (std::size_t k = 0; k < d.attrs.size(); ++k) {
    switch (d.attrs[k].kind) {
      case AttrKind::kInt:
        s += ", " + std::string(d.attrs[k].name) + " " + std::to_string(attrs[k].i);
        break;
      case AttrKind::kFloat:
        std::snprintf(buf, sizeof buf, ", %s %g", d.attrs[k].name, attrs[k].f);
        s += buf;
        break;
      case AttrKind::kBool:
        s += ", " + std::string(d.attrs[k].name) + (attrs[k].b ? " true" : " false");
        break;
      case AttrKind::kMask: {
        std::string m;
        for (bool b : attrs[k].mask) m += b ? "1" : "0";
        s += ", " + std::string(d.attrs[k].name) + " " + m;
        break;
      }
    }
  }
  return s;
}

int check_op(const OpDesc& d, const CheckState& o) {
  const std::vector<int64_t> shape = o.shape.empty() ? d.check_shape : o.shape;
  const int rank = static_cast<int>(shape.size());
  if (rank < d.min_rank || rank > d.max_rank) {
    return usage(std::string(d.name) + ": --shape " + shape_string(shape) + " has rank " + std::to_string(rank) +
                 "; expected " + std::to_string(d.min_rank) + " to " + std::to_string(d.max_rank));
  }
  ops::ProblemSpec spec;
  spec.shape = shape;
  spec.seed = o.seed;
  spec.aux_like_t = o.aux;
  spec.scalars = o.scalars;
  spec.attrs = d.attrs_for(shape);
  for (std::size_t k = 0; k < d.attrs.size(); ++k) {
    if (!o.attr_given[k]) continue;
    spec.attrs[k].i = o.ints[k];
    spec.attrs[k].f = o.reals[k];
    spec.attrs[k].b = o.flags[k];
    if (d.attrs[k].kind == AttrKind::kMask) spec.attrs[k].mask = o.masks[k];
  }
  const double bytes = footprint(d.shapes(shape, spec.attrs));
  const double phys = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  // Three copies of the problem: before, after, and the one-thread rerun.
  if (bytes < 0 || (phys > 0 && 3 * bytes >= 0.8 * phys)) {
    return usage(std::string(d.name) + ": --shape " + shape_string(shape) + " is too large for this machine");
  }
  const Context ctx{o.threads};
  std::printf("nnops check %s: shape %s, seed %llu, %d thread(s), SIMD %s%s\n", d.name, shape_string(shape).c_str(),
              static_cast<unsigned long long>(o.seed), resolve_num_threads(ctx), current_isa().c_str(),
              describe(d, spec, spec.attrs).c_str());
  std::printf("  %-9s %12s %11s %11s %11s %11s  %-21s %s\n", "dtype", "compared", "max |err|", "err/bound", "err",
              "bound", "same with 1 thread", "result");
  int failures = 0, total = 0;
  for (DType t : chosen_dtypes(o)) {
    spec.dtype = t;
    const Row r = check_one(d, spec, ctx);
    print_row(t, r);
    failures += !r.pass();
    ++total;
  }
  std::printf("%s: %d of %d passed\n", failures ? "FAIL" : "PASS", total - failures, total);
  return failures ? 1 : 0;
}

void add_check(CLI::App* check, const OpDesc& d, std::vector<Subcommand>* out) {
  auto o = std::make_shared<CheckState>();
  const std::size_t na = d.attrs.size();
  o->scalars.assign(d.tensors.size(), std::numeric_limits<double>::quiet_NaN());
  o->ints.assign(na, 0);
  o->reals.assign(na, 0);
  o->flags.reset(new bool[na + 1]());
  o->masks.assign(na, {});
  o->attr_given.assign(na, false);
  CLI::App* c = check->add_subcommand(
      d.name, std::string("Random inputs; the result against the float64 reference under the bound of "
                          "docs/semantics.md. ") +
                  d.summary);
  std::string default_shape;
  for (std::size_t i = 0; i < d.check_shape.size(); ++i) default_shape += (i ? "," : "") + std::to_string(d.check_shape[i]);
  c->add_option("--dtype", o->dtypes, "float32, float16, bfloat16 (several allowed; default: all three)")
      ->delimiter(',')
      ->type_name("DTYPE")
      ->check(CLI::Validator(
          [](std::string& s) { return parse_dtype(s) ? std::string() : "unknown dtype '" + s + "'"; }, ""));
  c->add_option("--shape", o->shape, "Dims of " + std::string(d.tensors[0].name) + ", outermost first, e.g. " +
                                         default_shape + " (the default)")
      ->delimiter(',')
      ->type_name("D0,D1,...")
      ->check(CLI::Validator(
          [](std::string& s) { return s.rfind('-', 0) == 0 ? "dimension " + s + " is negative" : std::string(); }, ""));
  c->add_option("--seed", o->seed, "Seed of the random inputs (default 1)");
  c->add_option("--threads", o->threads, "Threads (default: NNOPS_NUM_THREADS or all cores)")
      ->check(CLI::Range(0, 4096));
  if (*d.aux_flag) c->add_flag(d.aux_flag, o->aux, d.aux_help);
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    if (!d.tensors[i].scalar) continue;
    char def[48];
    std::snprintf(def, sizeof def, " (default %g), rounded to the dtype", d.scalar_defaults[i]);
    c->add_option(option_names(d.tensors[i].name), o->scalars[i], std::string(d.tensors[i].help) + def);
  }
  for (std::size_t k = 0; k < na; ++k) {
    const ops::AttrSpec& a = d.attrs[k];
    CLI::Option* opt = nullptr;
    switch (a.kind) {
      case AttrKind::kInt:
        opt = c->add_option(option_names(a.name), o->ints[k], std::string(a.help) + " (default: one that suits the shape)");
        break;
      case AttrKind::kFloat:
        opt = c->add_option(option_names(a.name), o->reals[k], a.help);
        break;
      case AttrKind::kBool:
        opt = c->add_flag(option_names(a.name), o->flags[k], a.help);
        break;
      case AttrKind::kMask:
        opt = c->add_option(option_names(a.name), o->masks[k], std::string(a.help) + " (default: all)")
                  ->delimiter(',')
                  ->type_name("B,B,...");
        break;
    }
    auto* given = &o->attr_given;
    opt->each([given, k](const std::string&) { (*given)[k] = true; });
  }
  c->footer(std::string("Example:\n") + d.check_example +
            "\nExit status: 0 every dtype passed, 1 a FAIL (or an operator error), 2 usage error.");
  const OpDesc* dp = &d;
  out->push_back({c, [o, dp] { return check_op(*dp, *o); }});
}

}  // namespace

void add_check_subcommands(CLI::App* check_cmd, std::vector<Subcommand>* out) {
  for (const OpDesc* d : ops::all_ops()) add_check(check_cmd, *d, out);
}

}  // namespace nnops::cli
