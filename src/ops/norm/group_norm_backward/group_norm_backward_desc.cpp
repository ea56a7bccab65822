// GroupNormBackward's descriptor: what the front ends (CLI, tests, fuzzer, benchmarks, Python) need.
#include <cmath>
#include <limits>

#include "aclnnop/aclnn_group_norm_backward.h"
#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"
#include "src/ops/problem_util.hpp"

namespace nnops::ops {
namespace {

using namespace gn_bwd;

int64_t hw_of(const std::vector<int64_t>& s) {
  int64_t hw = 1;
  for (std::size_t i = 2; i < s.size(); ++i) hw *= s[i];
  return hw;
}

std::vector<std::vector<int64_t>> shapes(const std::vector<int64_t>& main, const Attrs& a) {
  const int64_t n = main.size() > 0 ? main[0] : 0, c = main.size() > 1 ? main[1] : 0;
  const std::vector<int64_t> stats = {n, a.empty() ? 1 : a[kNumGroups].i};
  return {main, main, stats, stats, {c}, main, {c}, {c}};
}

// The forward's choice of groups (32 where C allows, else half the channels).
Attrs attrs_for(const std::vector<int64_t>& main) {
  Attrs a = desc_group_norm_backward().default_attrs();
  a[kNumGroups].i = desc_group_norm().attrs_for(main)[0].i;
  return a;
}

Status infer(const TensorView* t, const Attrs&, DType, std::vector<OutputShape>* out) {
  out->assign(kNumTensors, {});
  auto shape_of = [](const TensorView& v) {
    return std::vector<int64_t>(v.shape(), v.shape() + (v.rank_ok() ? v.rank() : 0));
  };
  for (int i = 0; i < kDx; ++i) (*out)[i] = {t[i].dtype(), shape_of(t[i])};
  (*out)[kDx] = {t[kDy].dtype(), shape_of(t[kDy])};
  // dgamma and dbeta in gamma's dtype (absent gamma: mean's), of C elements.
  const int64_t c = t[kDy].rank() > 1 ? t[kDy].dim(1) : 0;
  const DType pd = t[kGamma].is_none() ? t[kMean].dtype() : t[kGamma].dtype();
  (*out)[kDgamma] = {pd, {c}};
  (*out)[kDbeta] = {pd, {c}};
  return Status::ok();
}

// The forward's activations and statistics (computed from x in float64 and rounded to their dtype), dy of a few
// magnitudes, gamma of both signs.
Problem make_problem(const ProblemSpec& spec) {
  Problem p = empty_problem(desc_group_norm_backward(), spec);
  ProblemSpec fwd = spec;
  fwd.attrs = {p.attrs[kNumGroups], desc_group_norm().default_attrs()[1]};
  Problem f = desc_group_norm().make_problem(fwd);
  p.t[kX] = f.t[0].clone();
  fill_uniform(p.t[kGamma], spec.seed * 8 + 6, -1.5f, 1.5f);
  fill_uniform(p.t[kDy], spec.seed * 8 + 7, -1.0f, 1.0f);
  // mean and rstd of each group (float64, two passes), eps = 1e-5.
  const detail::HostBuffer& x = p.t[kX];
  const int64_t ng = p.t[kMean].numel();
  const int64_t m = ng ? x.numel() / ng : 0;
#pragma omp parallel for schedule(static)
  for (int64_t q = 0; q < ng; ++q) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < m; ++i) s += x.get(q * m + i);
    const double mu = m ? s / m : 0;
    for (int64_t i = 0; i < m; ++i) ss += (x.get(q * m + i) - mu) * (x.get(q * m + i) - mu);
    p.t[kMean].set(q, mu);
    p.t[kRstd].set(q, 1.0 / std::sqrt((m ? ss / m : 0) + 1e-5));
  }
  return p;
}

double bytes(const Problem& p) {
  const std::vector<bool>& mask = p.attrs[kOutputMask].mask;
  double b = 2.0 * p.t[kDy].bytes() + (mask[0] ? p.t[kDx].bytes() : 0);
  for (int i : {kMean, kRstd, kGamma}) b += p.present[i] ? p.t[i].bytes() : 0;
  for (int k : {1, 2}) b += mask[k] ? p.t[kDx + k].bytes() : 0;
  return b;
}

std::vector<BenchCase> bench_cases(DType t) {
  const double s = static_cast<double>(dtype_size(t));
  const int64_t l2 = static_cast<int64_t>(768.0 * 1024 / (3 * s)), l3 = static_cast<int64_t>(16.0 * 1024 * 1024 / (3 * s));
  const int64_t n = static_cast<int64_t>(std::ceil(1024.0 * 1024 * 1024 / (3 * s * 320 * 64 * 64)));
  return {
      {"l2", {1, 64, l2 / 64}, {}, ""},
      {"l3", {2, 64, l3 / 128}, {}, ""},
      {"dram", {n, 320, 64, 64}, {}, ""},
      {"dram-channels-last", {n, 320, 64, 64}, {}, "channels_last"},
  };
}

// Scalar arguments of aclnnGroupNormBackward: ints = {N, C, HxW, group}, bools = outputMask.
aclnnStatus acl_phase_one(const AclCall& c, uint64_t* ws, aclOpExecutor** e) {
  auto i = [&](std::size_t k) { return k < c.ints.size() ? c.ints[k] : 0; };
  bool mask[8] = {};
  for (std::size_t k = 0; k < c.bools.size() && k < 8; ++k) mask[k] = c.bools[k];
  aclBoolArray* m = c.bools_null ? nullptr : aclCreateBoolArray(mask, c.bools.size());
  const aclnnStatus st = aclnnGroupNormBackwardGetWorkspaceSize(c.t[kDy], c.t[kX], c.t[kMean], c.t[kRstd], c.t[kGamma],
                                                                i(0), i(1), i(2), i(3), m, c.t[kDx], c.t[kDgamma],
                                                                c.t[kDbeta], ws, e);
  if (m) aclDestroyBoolArray(m);
  return st;
}

void acl_defaults(const std::vector<std::vector<int64_t>>& s, const Attrs& a, AclCall* c) {
  const std::vector<int64_t>& x = s[kDy];
  c->ints = {x.size() > 0 ? x[0] : 0, x.size() > 1 ? x[1] : 0, hw_of(x), a[kNumGroups].i};
  c->bools = a[kOutputMask].mask;
}

const AclBinding kAcl = {"aclnnGroupNormBackwardGetWorkspaceSize", "aclnnGroupNormBackward", acl_phase_one,
                         aclnnGroupNormBackward, acl_defaults};

}  // namespace

const OpDesc& desc_group_norm_backward() {
  static const OpDesc d = [] {
    OpDesc o;
    o.name = kOpName;
    o.category = "norm";
    o.op_type = "GroupNormBackward";
    o.summary =
        "The true gradient of GroupNorm: with xhat = (x - mean)*rstd, per group a = sum(dy*gamma[c]), "
        "b = sum(dy*gamma[c]*xhat): dx = rstd*(gamma[c]*dy - (a + xhat*b)/M); dgamma[c] = sum over N and HxW of "
        "dy*xhat; dbeta[c] = sum of dy";
    o.notes =
        "This is what a training step needs (PyTorch's native_group_norm_backward). group_normalization_grad is CANN's "
        "other formula, the true gradient only when gamma is all ones (docs/semantics.md).";
    o.tensors = {
        {"dy", Role::kIn, DtypeRule::kT, false, false, "Gradient of the output, [N, C, *] (rank 2 to 8)"},
        {"x", Role::kIn, DtypeRule::kT, false, false, "The forward's input, shape and dtype of dy"},
        {"mean", Role::kIn, DtypeRule::kTOrF32, false, false, "The forward's mean, N*num_groups elements, dtype of dy or float32"},
        {"rstd", Role::kIn, DtypeRule::kTOrF32, false, false, "The forward's rstd, like mean"},
        {"gamma", Role::kIn, DtypeRule::kTOrF32, true, false, "Scale, C elements, dtype of dy or float32 (absent: 1)"},
        {"dx", Role::kOut, DtypeRule::kT, true, false, "Input gradient, shape and dtype of dy (may be dy's buffer)", kDy},
        {"dgamma", Role::kOut, DtypeRule::kTOrF32, true, false, "Gradient of gamma, C elements, dtype of dy or float32"},
        {"dbeta", Role::kOut, DtypeRule::kTOrF32, true, false, "Gradient of beta, C elements, dtype of dgamma"},
    };
    o.attrs = {{"num_groups", AttrKind::kInt, std::numeric_limits<double>::quiet_NaN(),
                "Groups of the forward call (> 0, divides C)"},
               {"output_mask", AttrKind::kMask, 0, "Which of dx, dgamma, dbeta to compute"}};
    o.min_rank = 2;
    o.max_rank = kMaxRank;
    o.prepare = gn_bwd::prepare;
    o.infer = infer;
    o.shapes = shapes;
    o.attrs_for = attrs_for;
    o.make_problem = make_problem;
    o.verify = gn_bwd::verify;
    o.bytes = bytes;
    o.model_bytes = nullptr;
    o.probe = {2, 1, false};
    o.check_shape = {2, 64, 7, 9};
    o.demo_shape = {8, 320, 32, 32};
    o.demo_quick_shape = {2, 64, 16, 16};
    o.bench_cases = bench_cases;
    o.test_shapes = {{1, 1},       {2, 3},          {1, 4, 1},     {2, 6, 5},       {1, 8, 17},
                     {2, 4, 3, 5}, {1, 2, 1000},    {2, 32, 3, 3}, {1, 6, 2, 2, 2}, {2, 64, 7, 9}};
    o.aux_flag = "--stats-like-x";
    o.aux_help = "mean, rstd, gamma, dgamma and dbeta in dy's dtype instead of float32";
    o.run_example =
        "  nnops run group_norm_backward --dy dy.npy --x x.npy --mean mean.npy --rstd rstd.npy \\\n"
        "      --gamma gamma.npy --num-groups 32 --dx dx.npy --dgamma dgamma.npy --dbeta dbeta.npy";
    o.check_example = "  nnops check group_norm_backward --dtype float16 --shape 2,320,16,16 --num-groups 32";
    o.acl = &kAcl;
    return o;
  }();
  return d;
}

}  // namespace nnops::ops
