#include "src/acl/adapter.hpp"

#include <memory>
#include <new>
#include <vector>

#include "src/acl/error.hpp"
#include "src/acl/executor.hpp"
#include "src/acl/tensor.hpp"

namespace nnops::acl {

aclnnStatus phase_one(const char* phase1, const char* phase2, ops::PrepareFn prepare,
                      std::initializer_list<TensorArg> tensors, const ops::Attrs& attrs, uint64_t* workspace_size,
                      aclOpExecutor** executor,
                      const std::function<Status(TensorView* views)>& binding_check) noexcept {
  return guard_aclnn(phase1, [&]() -> aclnnStatus {
    if (workspace_size != nullptr) *workspace_size = 0;
    if (executor != nullptr) *executor = nullptr;
    for (const TensorArg& a : tensors) {
      if (a.required && a.t == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, phase1, std::string(a.name) + " is null");
    }
    if (aclnnStatus st = check_not_null(phase1, {{"workspaceSize", workspace_size}, {"executor", executor}})) {
      return st;
    }
    std::vector<TensorView> views(tensors.size());
    std::size_t i = 0;
    for (const TensorArg& a : tensors) {
      if (a.t != nullptr) {
        if (Status s = to_view(a.name, a.t, &views[i]); !s) return fail_status(phase1, s);
      }
      ++i;
    }
    if (binding_check) {
      if (Status s = binding_check(views.data()); !s) return fail_status(phase1, s);
    }
    ops::Prepared p;
    if (Status s = prepare(views.data(), attrs, Context{}, &p); !s) return fail_status(phase1, s);

    std::unique_ptr<Executor> e(new (std::nothrow) Executor);
    if (!e) return fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, phase1, "out of memory creating the executor");
    e->api = phase2;
    e->phase_one = phase1;
    // Only the tensors the kernel touches are pinned (e.g. PowerSign's scalars were read by prepare).
    e->operands.reserve(p.touched.size());
    for (int k : p.touched) {
      if (Status s = add_operand(tensors.begin()[k].name, views[k], &e->operands); !s) return fail_status(phase1, s);
    }
    if (p.run) {
      e->workspace_bytes = p.workspace_bytes;
      e->kernel = std::move(p.run);
    }
    *workspace_size = e->workspace_bytes;
    *executor = register_executor(std::move(e));
    return ACLNN_SUCCESS;
  });
}

}  // namespace nnops::acl
