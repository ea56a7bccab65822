// GroupNormBackward's descriptor: what the front ends (CLI, tests, fuzzer, benchmarks, Python) need.
#include <cmath>
#include <limits>

#include "aclnnop/aclnn_group_norm_backward.h"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"
#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"
#include "src/ops/problem_util.hpp"

namespace nnops::ops {
namespace {

using namespace gn_bwd;

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
  fill_group_stats(p.t[kX], p.t[kMean], p.t[kRstd]);
  return p;
}

double bytes(const Problem& p) {
  const std::vector<bool>& mask = p.attrs[kOutputMask].mask;
  double b = 2.0 * p.t[kDy].bytes() + (mask[0] ? p.t[kDx].bytes() : 0);
  for (int i : {kMean, kRstd, kGamma}) b += p.present[i] ? p.t[i].bytes() : 0;
  for (int k : {1, 2}) b += mask[k] ? p.t[kDx + k].bytes() : 0;
  return b;
}

std::vector<BenchCase> bench_cases(DType t) { return group_norm_bench_cases(t, 3); }

// Scalar arguments of aclnnGroupNormBackward: ints = {N, C, HxW, group}, bools = outputMask.
aclnnStatus acl_phase_one(const AclCall& c, uint64_t* ws, aclOpExecutor** e) {
  auto i = [&](std::size_t k) { return k < c.ints.size() ? c.ints[k] : 0; };
  bool mask[8] = {};
  for (std::size_t k = 0; k < c.bools.size() && k < 8; ++k) mask[k] = c.bools[k];
  aclBoolArray* m = c.bools_null ? nullptr : aclCreateBoolArray(mask, c.bools.size());
  const aclnnStatus st =
      aclnnGroupNormBackwardGetWorkspaceSize(c.t[kDy], c.t[kX], c.t[kMean], c.t[kRstd], c.t[kGamma], i(0), i(1), i(2),
                                             i(3), m, c.t[kDx], c.t[kDgamma], c.t[kDbeta], ws, e);
  if (m) aclDestroyBoolArray(m);
  return st;
}

void acl_defaults(const std::vector<std::vector<int64_t>>& s, const Attrs& a, AclCall* c) {
  c->ints = gn::acl_shape_ints(s[kDy], a[kNumGroups].i);
  c->bools = a[kOutputMask].mask;
}

const AclBinding kAcl = {"aclnnGroupNormBackwardGetWorkspaceSize", "aclnnGroupNormBackward", acl_phase_one,
                         aclnnGroupNormBackward, acl_defaults};

}  // namespace

const OpDesc& desc_group_norm_backward() {
  static const OpDesc d = [] {
    OpDesc o;
    gn::describe_family(o);
    o.name = kOpName;
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
        {"mean", Role::kIn, DtypeRule::kTOrF32, false, false,
         "The forward's mean, N*num_groups elements, dtype of dy or float32"},
        {"rstd", Role::kIn, DtypeRule::kTOrF32, false, false, "The forward's rstd, like mean"},
        {"gamma", Role::kIn, DtypeRule::kTOrF32, true, false, "Scale, C elements, dtype of dy or float32 (absent: 1)"},
        {"dx", Role::kOut, DtypeRule::kT, true, false, "Input gradient, shape and dtype of dy (may be dy's buffer)",
         kDy},
        {"dgamma", Role::kOut, DtypeRule::kTOrF32, true, false,
         "Gradient of gamma, C elements, dtype of dy or float32"},
        {"dbeta", Role::kOut, DtypeRule::kTOrF32, true, false, "Gradient of beta, C elements, dtype of dgamma"},
    };
    o.attrs = {{"num_groups", AttrKind::kInt, std::numeric_limits<double>::quiet_NaN(),
                "Groups of the forward call (> 0, divides C)"},
               {"output_mask", AttrKind::kMask, 0, "Which of dx, dgamma, dbeta to compute"}};
    o.prepare = gn_bwd::prepare;
    o.infer = infer;
    o.shapes = shapes;
    o.attrs_for = attrs_for;
    o.make_problem = make_problem;
    o.verify = gn_bwd::verify;
    o.bytes = bytes;
    o.probe = {2, 1, false};
    o.bench_cases = bench_cases;
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
