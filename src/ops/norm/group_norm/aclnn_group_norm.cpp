// aclnnGroupNorm: CANN's signature bound to the descriptor's tensors and attributes; the two phases are the
// generic ones (src/acl/adapter.hpp, executor.hpp). What CANN checks beyond the C++ API: every tensor in
// self's dtype, and N, C, HxW consistent with self's shape.
#include "aclnnop/aclnn_group_norm.h"

#include <string>

#include "src/acl/adapter.hpp"
#include "src/acl/executor.hpp"
#include "src/core/check.hpp"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"

namespace {

constexpr const char* kPhase1 = "aclnnGroupNormGetWorkspaceSize";
constexpr const char* kPhase2 = "aclnnGroupNorm";
const char* const kAclNames[] = {"self", "gamma", "beta", "out", "meanOut", "rstdOut"};

}  // namespace

extern "C" aclnnStatus aclnnGroupNormGetWorkspaceSize(const aclTensor* self, const aclTensor* gamma,
                                                      const aclTensor* beta, int64_t N, int64_t C, int64_t HxW,
                                                      int64_t group, double eps, aclTensor* out, aclTensor* meanOut,
                                                      aclTensor* rstdOut, uint64_t* workspaceSize,
                                                      aclOpExecutor** executor) {
  using namespace nnops;
  ops::Attrs attrs(2);
  attrs[gn::kNumGroups].i = group;
  attrs[gn::kEps].f = eps;
  auto cann_rules = [&](TensorView* v) -> Status {
    const TensorView& x = v[gn::kX];
    for (int i = 1; i < gn::kNumTensors; ++i) {
      if (v[i].is_none() || v[i].dtype() == x.dtype()) continue;
      return Status(StatusCode::kInvalidArgument, std::string(kAclNames[i]) + " has dtype " + dtype_name(v[i].dtype()) +
                                                      "; expected " + dtype_name(x.dtype()) + " (the dtype of self)");
    }
    if (x.rank() < 2) return Status::ok();  // the operator's check reports the rank
    int64_t hw = 0;
    if (!gn::trailing_product(x, &hw)) return Status::ok();  // check reports the overflow
    const struct {
      const char* name;
      int64_t given, want;
      const char* what;
    } dims[] = {{"N", N, x.dim(0), "self's dim 0"},
                {"C", C, x.dim(1), "self's dim 1"},
                {"HxW", HxW, hw, "the product of self's dims after C"}};
    for (const auto& d : dims) {
      if (d.given != d.want) {
        return Status(StatusCode::kInvalidArgument, std::string(d.name) + " is " + std::to_string(d.given) +
                                                        "; expected " + d.what + " (" + std::to_string(d.want) + ")");
      }
    }
    return Status::ok();
  };
  return acl::phase_one(kPhase1, kPhase2, gn::prepare,
                        {{kAclNames[0], self, true},
                         {kAclNames[1], gamma, false},
                         {kAclNames[2], beta, false},
                         {kAclNames[3], out, true},
                         {kAclNames[4], meanOut, true},
                         {kAclNames[5], rstdOut, true}},
                        attrs, workspaceSize, executor, cann_rules);
}

extern "C" aclnnStatus aclnnGroupNorm(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                      aclrtStream stream) {
  return nnops::acl::launch(kPhase2, workspace, workspaceSize, executor, stream);
}
