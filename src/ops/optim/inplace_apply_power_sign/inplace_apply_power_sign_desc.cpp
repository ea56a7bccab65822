// InplaceApplyPowerSign's descriptor: what the front ends (CLI, tests, fuzzer, benchmarks, Python) need.
#include <cmath>

#include "aclnnop/aclnn_inplace_apply_power_sign.h"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"
#include "src/ops/problem_util.hpp"

namespace nnops::ops {
namespace {

using namespace power_sign;

std::vector<std::vector<int64_t>> shapes(const std::vector<int64_t>& main, const Attrs&) {
  return {main, main, {1}, {1}, {1}, {1}, main};
}

Status infer(const TensorView* t, const Attrs&, DType, std::vector<OutputShape>* out) {
  out->assign(kNumTensors, {});
  for (int i = 0; i < kNumTensors; ++i) {
    (*out)[i].dtype = t[i].dtype();
    (*out)[i].shape.assign(t[i].shape(), t[i].shape() + (t[i].rank_ok() ? t[i].rank() : 0));
  }
  return Status::ok();
}

Problem make_problem(const ProblemSpec& spec) {
  const OpDesc& d = desc_inplace_apply_power_sign();
  Problem p = empty_problem(d, spec);
  fill_uniform(p.t[kVar], spec.seed * 8 + 4, -1.0f, 1.0f);
  fill_uniform(p.t[kM], spec.seed * 8 + 5, -1e-2f, 1e-2f);
  fill_uniform(p.t[kGrad], spec.seed * 8 + 6, -1e-2f, 1e-2f);
  for (int i : {kLr, kLogbase, kSignDecay, kBeta}) p.t[i].set(0, scalar_value(d, spec, i));
  return p;
}

detail::VerifyReport verify(const Problem& before, const Problem& after, int64_t sample) {
  const Scalars s{before.t[kLr].get(0), before.t[kLogbase].get(0), before.t[kSignDecay].get(0), before.t[kBeta].get(0)};
  return power_sign::verify(s, before.t[kVar], before.t[kM], before.t[kGrad], after.t[kVar], after.t[kM], sample);
}

double bytes(const Problem& p) { return 5.0 * p.t[kVar].bytes(); }

std::vector<BenchCase> bench_cases(DType t) {
  const double s = static_cast<double>(dtype_size(t));
  return {
      {"l2", {static_cast<int64_t>(bench_l2_bytes() / (3 * s))}, {}, ""},
      {"l3", {static_cast<int64_t>(bench_l3_bytes() / (3 * s))}, {}, ""},
      {"dram", {static_cast<int64_t>(std::ceil(1024.0 * 1024 * 1024 / (5 * s)))}, {}, ""},
  };
}

// Scalar arguments: flags = {useLocking}.
aclnnStatus acl_phase_one(const AclCall& c, uint64_t* ws, aclOpExecutor** e) {
  return aclnnInplaceApplyPowerSignGetWorkspaceSize(c.t[0], c.t[1], c.t[2], c.t[3], c.t[4], c.t[5], c.t[6],
                                                    !c.flags.empty() && c.flags[0], ws, e);
}

void acl_defaults(const std::vector<std::vector<int64_t>>&, const Attrs& a, AclCall* c) {
  c->flags = {!a.empty() && a[0].b};
}

const AclBinding kAcl = {"aclnnInplaceApplyPowerSignGetWorkspaceSize", "aclnnInplaceApplyPowerSign", acl_phase_one,
                         aclnnInplaceApplyPowerSign, acl_defaults};

}  // namespace

const OpDesc& desc_inplace_apply_power_sign() {
  static const OpDesc d = [] {
    OpDesc o;
    o.name = kOpName;
    o.category = "optim";
    o.op_type = "InplaceApplyPowerSign";
    o.summary =
        "One PowerSign optimizer step, updating var and m in place: m = beta*m + (1-beta)*grad; "
        "var -= lr * exp(logbase * sign_decay * sign(m)*sign(grad)) * grad";
    o.notes = "";
    o.tensors = {
        {"var", Role::kInOut, DtypeRule::kT, false, false,
         "Variable, any shape; float32/float16/bfloat16; updated in place"},
        {"m", Role::kInOut, DtypeRule::kT, false, false, "Momentum, shape and dtype of var; updated in place"},
        {"lr", Role::kIn, DtypeRule::kT, false, true, "Learning rate"},
        {"logbase", Role::kIn, DtypeRule::kT, false, true, "Log base"},
        {"sign_decay", Role::kIn, DtypeRule::kT, false, true, "Sign decay"},
        {"beta", Role::kIn, DtypeRule::kT, false, true, "Momentum decay in [0, 1)"},
        {"grad", Role::kIn, DtypeRule::kT, false, false, "Gradient, shape and dtype of var"},
    };
    o.attrs = {{"use_locking", AttrKind::kBool, 0,
                "Serialize concurrent updates of var (as in TensorFlow; one process has no concurrent callers)"}};
    o.min_rank = 0;
    o.max_rank = kMaxRank;
    o.prepare = power_sign::prepare;
    o.infer = infer;
    o.shapes = shapes;
    o.attrs_for = [](const std::vector<int64_t>&) { return desc_inplace_apply_power_sign().default_attrs(); };
    o.make_problem = make_problem;
    o.verify = verify;
    o.bytes = bytes;
    o.model_bytes = nullptr;
    o.probe = {3, 2, true};
    o.check_shape = {100003};
    o.demo_shape = {25'000'000};
    o.demo_quick_shape = {1 << 20};
    o.bench_cases = bench_cases;
    o.test_shapes = {{}, {1}, {7}, {31}, {256}, {1000}, {3, 1001}, {40000}};
    o.scalar_defaults = {0, 0, 1e-3, 1.0, 0.99, 0.9, 0};
    o.aux_flag = "";
    o.aux_help = "";
    o.run_example =
        "  nnops run inplace_apply_power_sign --var var.npy --m m.npy --grad grad.npy \\\n"
        "      --lr 0.001 --logbase 1.0 --sign-decay 0.99 --beta 0.9";
    o.check_example = "  nnops check inplace_apply_power_sign --dtype float16 --shape 1000000 --seed 3";
    o.acl = &kAcl;
    return o;
  }();
  return d;
}

}  // namespace nnops::ops
