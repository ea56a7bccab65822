// GroupNorm's descriptor: what the front ends (CLI, tests, fuzzer, benchmarks, Python) need.
#include <cmath>
#include <limits>
#include <numeric>

#include "aclnnop/aclnn_group_norm.h"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"
#include "src/ops/problem_util.hpp"

namespace nnops::ops {
namespace {

using namespace gn;

std::vector<std::vector<int64_t>> shapes(const std::vector<int64_t>& main, const Attrs& a) {
  const int64_t n = main.size() > 0 ? main[0] : 0, c = main.size() > 1 ? main[1] : 0;
  return {main, {c}, {c}, main, {n, a.empty() ? 1 : a[kNumGroups].i}, {n, a.empty() ? 1 : a[kNumGroups].i}};
}

// 32 groups (Stable Diffusion's and most models') where C allows, otherwise half the channels (or 1), so that
// small test shapes still have several channels per group.
Attrs attrs_for(const std::vector<int64_t>& main) {
  Attrs a = desc_group_norm().default_attrs();
  const int64_t c = main.size() > 1 ? main[1] : 1;
  int64_t g = 1;
  if (c >= 64 && c % 32 == 0) {
    g = 32;
  } else {
    for (int64_t d = std::max<int64_t>(1, c / 2); d >= 1; --d) {
      if (c % d == 0) {
        g = d;
        break;
      }
    }
  }
  a[kNumGroups].i = g;
  return a;
}

Status infer(const TensorView* t, const Attrs& a, DType aux, std::vector<OutputShape>* out) {
  out->assign(kNumTensors, {});
  const TensorView& x = t[kX];
  for (int i : {kX, kGamma, kBeta}) {
    (*out)[i] = {t[i].dtype(), shape_of(t[i])};
  }
  (*out)[kOut] = {x.dtype(), shape_of(x)};
  const int64_t n = x.rank() > 0 ? x.dim(0) : 0;
  const DType st = aux == DType::kFloat32 ? DType::kFloat32 : x.dtype();
  (*out)[kMean] = {st, {n, a[kNumGroups].i}};
  (*out)[kRstd] = (*out)[kMean];
  return Status::ok();
}

// Activations with a per-channel offset and scale (so that groups have |mean| and spread of different sizes),
// gamma around 1 of both signs, small beta.
Problem make_problem(const ProblemSpec& spec) {
  Problem p = empty_problem(desc_group_norm(), spec);
  detail::HostBuffer& x = p.t[kX];
  const int64_t c = spec.shape.size() > 1 ? spec.shape[1] : 1, hw = dims_from(spec.shape, 2);
  const int64_t n = x.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ch = c && hw ? (i / hw) % c : 0;
    const double off = 6 * uniform01(spec.seed * 8 + 1, static_cast<uint64_t>(ch)) - 3;
    const double sd = 0.1 + 3 * uniform01(spec.seed * 8 + 2, static_cast<uint64_t>(ch));
    x.set(i, off + sd * (2 * uniform01(spec.seed * 8 + 3, static_cast<uint64_t>(i)) - 1));
  }
  fill_uniform(p.t[kGamma], spec.seed * 8 + 4, -1.5f, 1.5f);
  fill_uniform(p.t[kBeta], spec.seed * 8 + 5, -0.5f, 0.5f);
  return p;
}

double bytes(const Problem& p) {
  double b = 2.0 * p.t[kX].bytes();
  for (int i : {kGamma, kBeta, kMean, kRstd}) b += p.present[i] ? p.t[i].bytes() : 0;
  return b;
}

std::vector<BenchCase> bench_cases(DType t) { return group_norm_bench_cases(t, 2); }

// Scalar arguments of aclnnGroupNorm: ints = {N, C, HxW, group}, reals = {eps}.
aclnnStatus acl_phase_one(const AclCall& c, uint64_t* ws, aclOpExecutor** e) {
  auto i = [&](std::size_t k) { return k < c.ints.size() ? c.ints[k] : 0; };
  return aclnnGroupNormGetWorkspaceSize(c.t[kX], c.t[kGamma], c.t[kBeta], i(0), i(1), i(2), i(3),
                                        c.reals.empty() ? 0.0 : c.reals[0], c.t[kOut], c.t[kMean], c.t[kRstd], ws, e);
}

void acl_defaults(const std::vector<std::vector<int64_t>>& s, const Attrs& a, AclCall* c) {
  c->ints = acl_shape_ints(s[kX], a[kNumGroups].i);
  c->reals = {a[kEps].f};
}

const AclBinding kAcl = {"aclnnGroupNormGetWorkspaceSize", "aclnnGroupNorm", acl_phase_one, aclnnGroupNorm,
                         acl_defaults};

}  // namespace

const OpDesc& desc_group_norm() {
  static const OpDesc d = [] {
    OpDesc o;
    describe_family(o);
    o.name = kOpName;
    o.op_type = "GroupNorm";
    o.summary =
        "Group normalization (forward): per group of M = C/num_groups*HxW elements, mean = sum(x)/M, "
        "var = sum((x - mean)^2)/M, rstd = 1/sqrt(var + eps), out = (x - mean)*rstd*gamma[c] + beta[c]";
    o.notes = "";
    o.tensors = {
        {"x", Role::kIn, DtypeRule::kT, false, false, "Input, [N, C, *] (rank 2 to 8), float32/float16/bfloat16"},
        {"gamma", Role::kIn, DtypeRule::kTOrF32, true, false, "Scale, [C], dtype of x or float32 (absent: 1)"},
        {"beta", Role::kIn, DtypeRule::kTOrF32, true, false, "Shift, [C], dtype of gamma's rule (absent: 0)"},
        {"out", Role::kOut, DtypeRule::kT, false, false, "Normalized x, shape and dtype of x"},
        {"mean", Role::kOut, DtypeRule::kTOrF32, false, false, "Group means, [N, num_groups], dtype of x or float32"},
        {"rstd", Role::kOut, DtypeRule::kTOrF32, false, false,
         "Group 1/sqrt(var + eps), [N, num_groups], dtype of mean"},
    };
    o.attrs = {{"num_groups", AttrKind::kInt, std::numeric_limits<double>::quiet_NaN(),
                "Groups the C channels are split into (> 0, divides C)"},
               {"eps", AttrKind::kFloat, 1e-5, "Added to the variance (> 0, finite; default 1e-5)"}};
    o.prepare = gn::prepare;
    o.infer = infer;
    o.shapes = shapes;
    o.attrs_for = attrs_for;
    o.make_problem = make_problem;
    o.verify = gn::verify;
    o.bytes = bytes;
    o.probe = {1, 1, false};
    o.bench_cases = bench_cases;
    o.aux_help = "gamma, beta, mean and rstd in x's dtype instead of float32";
    o.run_aux_flag = "--float32-stats";
    o.run_aux_help = "Write mean and rstd in float32 instead of x's dtype (what a backward pass should keep)";
    o.run_example =
        "  nnops run group_norm --x x.npy --gamma gamma.npy --beta beta.npy --num-groups 32 \\\n"
        "      --out out.npy --mean mean.npy --rstd rstd.npy";
    o.check_example = "  nnops check group_norm --dtype bfloat16 --shape 2,320,32,32 --num-groups 32";
    o.acl = &kAcl;
    return o;
  }();
  return d;
}

}  // namespace nnops::ops

namespace nnops::gn {

std::vector<int64_t> acl_shape_ints(const std::vector<int64_t>& x, int64_t groups) {
  return {x.size() > 0 ? x[0] : 0, x.size() > 1 ? x[1] : 0, ops::dims_from(x, 2), groups};
}

bool trailing_product(const TensorView& t, int64_t* hw) {
  int64_t p = 1;
  for (int i = 2; i < t.rank(); ++i) {
    if (__builtin_mul_overflow(p, t.dim(i), &p)) return false;
  }
  *hw = p;
  return true;
}

void describe_family(ops::OpDesc& o) {
  o.category = "norm";
  o.min_rank = 2;
  o.max_rank = kMaxRank;
  o.check_shape = {2, 64, 7, 9};
  o.demo_shape = {8, 320, 32, 32};
  o.demo_quick_shape = {2, 64, 16, 16};
  o.test_shapes = {{1, 1},       {2, 3},       {1, 4, 1},     {2, 6, 5},       {1, 8, 17},
                   {2, 4, 3, 5}, {1, 2, 1000}, {2, 32, 3, 3}, {1, 6, 2, 2, 2}, {2, 64, 7, 9}};
  o.aux_flag = "--stats-like-x";
  o.model_bytes = nullptr;
}

}  // namespace nnops::gn
