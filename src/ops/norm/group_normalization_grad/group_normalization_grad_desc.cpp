// GroupNormalizationGrad's descriptor: what the front ends (CLI, tests, fuzzer, benchmarks, Python) need.
#include <cmath>

#include "aclnnop/aclnn_group_normalization_grad.h"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"
#include "src/ops/problem_util.hpp"

namespace nnops::ops {
namespace {

using gn_grad::kDx;
using gn_grad::kDy;
using gn_grad::kGamma;
using gn_grad::kMean;
using gn_grad::kRstd;
using gn_grad::kX;

std::vector<std::vector<int64_t>> shapes(const std::vector<int64_t>& main, const Attrs&) {
  const std::vector<int64_t> ng = {main.size() > 0 ? main[0] : 0, main.size() > 1 ? main[1] : 0};
  return {main, main, main, ng, ng, main};
}

Status infer(const TensorView* t, const Attrs&, DType, std::vector<OutputShape>* out) {
  out->assign(gn_grad::kNumTensors, {});
  for (int i = 0; i < gn_grad::kNumTensors; ++i) {
    const TensorView& v = i == kDx ? t[kX] : t[i];
    (*out)[i].dtype = v.dtype();
    (*out)[i].shape.assign(v.shape(), v.shape() + (v.rank_ok() ? v.rank() : 0));
  }
  return Status::ok();
}

Problem make_problem(const ProblemSpec& spec) {
  Problem p = empty_problem(desc_group_normalization_grad(), spec);
  fill_uniform(p.t[kX], spec.seed * 8 + 1, -2.0f, 2.0f);
  fill_uniform(p.t[kDy], spec.seed * 8 + 2, -1.0f, 1.0f);
  fill_uniform(p.t[kGamma], spec.seed * 8 + 3, 0.5f, 1.5f);
  fill_group_stats(p.t[kX], p.t[kMean], p.t[kRstd]);
  return p;
}

detail::VerifyReport verify(const Problem& before, const Problem& after, int64_t sample) {
  return gn_grad::verify(before.t[kX], before.t[kDy], before.t[kGamma], before.t[kMean], before.t[kRstd], after.t[kDx],
                         sample);
}

double bytes(const Problem& p) { return 4.0 * p.t[kX].bytes() + 2.0 * p.t[kMean].bytes(); }

// A group whose three inputs do not stay in the cache between the two passes is read twice.
double model_bytes(const Problem& p) {
  const double group_bytes = p.t[kMean].numel() ? 3.0 * p.t[kX].bytes() / p.t[kMean].numel() : 0;
  return group_bytes > 1024.0 * 1024 ? 7.0 * p.t[kX].bytes() : bytes(p);
}

std::vector<BenchCase> bench_cases(DType t) {
  const double s = static_cast<double>(dtype_size(t));
  // "l2" fits one core's L2 with room to spare, "l3" the shared L3, "dram" moves at least 1 GiB per call in
  // groups of 8192 elements (each fits L2: the common case), "dram-big" has groups far larger than L2.
  return {
      {"l2", {2, 4, static_cast<int64_t>(bench_l2_bytes() / (4 * s) / 8)}, {}, ""},
      {"l3", {8, 8, static_cast<int64_t>(bench_l3_bytes() / (4 * s) / 64)}, {}, ""},
      {"dram",
       {static_cast<int64_t>(std::ceil(1024.0 * 1024 * 1024 / (4 * s) / (32.0 * 8192))), 32, 8, 32, 32},
       {},
       ""},
      {"dram-big", {2, 4, int64_t{1} << 22}, {}, ""},
  };
}

aclnnStatus acl_phase_one(const AclCall& c, uint64_t* ws, aclOpExecutor** e) {
  return aclnnGroupNormalizationGradGetWorkspaceSize(c.t[0], c.t[1], c.t[2], c.t[3], c.t[4], c.t[5], ws, e);
}

void acl_defaults(const std::vector<std::vector<int64_t>>&, const Attrs&, AclCall*) {}

const AclBinding kAcl = {"aclnnGroupNormalizationGradGetWorkspaceSize", "aclnnGroupNormalizationGrad", acl_phase_one,
                         aclnnGroupNormalizationGrad, acl_defaults};

}  // namespace

const OpDesc& desc_group_normalization_grad() {
  static const OpDesc d = [] {
    OpDesc o;
    o.name = gn_grad::kOpName;
    o.category = "norm";
    o.op_type = "GroupNormalizationGrad";
    o.summary =
        "dx of group normalization as CANN computes it: per group of M elements, "
        "dx = (rstd/M) * gamma * (M*dy - sum(dy*gamma) - xhat*sum(dy*gamma*xhat)), xhat = (x - mean)*rstd";
    o.notes =
        "NB: the formula equals the true GroupNorm input gradient only when gamma is all ones; group_norm_backward "
        "computes the true gradient (docs/semantics.md).";
    o.tensors = {
        {"x", Role::kIn, DtypeRule::kT, false, false, "Input x, [N, G, d2, ...] (rank >= 3), float32/float16/bfloat16"},
        {"dy", Role::kIn, DtypeRule::kT, false, false, "Gradient of the output, shape and dtype of x"},
        {"gamma", Role::kIn, DtypeRule::kT, false, false, "Scale, already broadcast to the shape of x; dtype of x"},
        {"mean", Role::kIn, DtypeRule::kTOrF32, false, false, "Group means, [N, G], dtype of x or float32"},
        {"rstd", Role::kIn, DtypeRule::kTOrF32, false, false, "Group 1/sqrt(var + eps), [N, G], dtype of mean"},
        {"dx", Role::kOut, DtypeRule::kT, false, false, "Input gradient, shape and dtype of x (may be dy's buffer)",
         kDy},
    };
    o.min_rank = 3;
    o.max_rank = kMaxRank;
    o.prepare = gn_grad::prepare;
    o.infer = infer;
    o.shapes = shapes;
    o.attrs_for = [](const std::vector<int64_t>&) { return Attrs{}; };
    o.make_problem = make_problem;
    o.verify = verify;
    o.bytes = bytes;
    o.model_bytes = model_bytes;
    o.probe = {3, 1, false};
    o.check_shape = {2, 8, 3, 33, 35};
    o.demo_shape = {8, 32, 16, 64, 64};
    o.demo_quick_shape = {2, 32, 4, 32, 32};
    o.bench_cases = bench_cases;
    o.test_shapes = {{1, 1, 1}, {1, 3, 7}, {2, 4, 17}, {2, 3, 1000}, {1, 2, 4097}, {2, 4, 3, 5, 7}};
    o.aux_flag = "--stats-like-x";
    o.aux_help = "mean and rstd in x's dtype instead of float32";
    o.run_example =
        "  nnops run group_normalization_grad --x x.npy --dy dy.npy --gamma gamma.npy \\\n"
        "      --mean mean.npy --rstd rstd.npy --dx dx.npy";
    o.check_example = "  nnops check group_normalization_grad --dtype bfloat16 --shape 4,32,16,64 --seed 7";
    o.acl = &kAcl;
    return o;
  }();
  return d;
}

}  // namespace nnops::ops
