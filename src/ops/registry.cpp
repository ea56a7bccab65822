// The operator list as data: one descriptor per line of src/ops/op_list.inc, and the helpers every
// descriptor shares.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <string>

#include "src/ops/op_desc.hpp"

namespace nnops::ops {

const std::vector<const OpDesc*>& all_ops() {
  static const std::vector<const OpDesc*> ops = {
#define NNOPS_OP(name, category, op_type) &desc_##name(),
#include "src/ops/op_list.inc"
#undef NNOPS_OP
  };
  return ops;
}

const OpDesc* find_op(const std::string& name) {
  for (const OpDesc* d : all_ops()) {
    if (name == d->name) return d;
  }
  return nullptr;
}

namespace {

// NB: why a thread keeps its workspace. A small call's malloc and free of its workspace (and glibc's consolidation of
// the freed chunk) were ~0.3 us of the ~1.4 us a GroupNorm call on a handful of elements costs (Ice Lake VM): each
// thread keeps one buffer of up to kKeptWorkspaceBytes for its next call. Larger workspaces (dense copies of big
// strided tensors, the partial sums of many threads) are allocated per call, where the kernel outweighs the
// allocation, so an idle thread holds at most this much. A call made while the thread's buffer is in use (from inside
// another call's run) allocates its own.
constexpr uint64_t kKeptWorkspaceBytes = uint64_t{1} << 20;

struct KeptWorkspace {
  detail::HostBuffer buf;
  bool busy = false;
};

// The calling thread's kept buffer grown to `bytes` (64-byte aligned, as every workspace) and marked busy, or null
// where it cannot serve.
unsigned char* take_kept_workspace(KeptWorkspace& k, uint64_t bytes) {
  if (bytes > kKeptWorkspaceBytes || k.busy) return nullptr;
  if (k.buf.bytes() < bytes) {
    const uint64_t grown = std::max<uint64_t>((bytes + 4095) / 4096 * 4096, 2 * k.buf.bytes());
    const uint64_t size = std::min(grown, kKeptWorkspaceBytes);
    k.buf = detail::HostBuffer();  // the old buffer goes before the new one comes
    k.buf = detail::HostBuffer(DType::kFloat32, {static_cast<int64_t>(size / 4)}, /*zero=*/false);
  }
  k.busy = true;
  return static_cast<unsigned char*>(k.buf.data());
}

}  // namespace

Status run_prepared(const char* op, PrepareFn prepare, const TensorView* t, const Attrs& a, const Context& ctx) {
  try {
    Prepared p;
    if (Status s = prepare(t, a, ctx, &p); !s) return s;
    if (!p.run) return Status::ok();
    if (p.workspace_bytes == 0) {
      p.run(nullptr);
      return Status::ok();
    }
    thread_local KeptWorkspace kept;
    if (unsigned char* w = take_kept_workspace(kept, p.workspace_bytes)) {
      struct Release {
        KeptWorkspace& k;
        ~Release() { k.busy = false; }
      } release{kept};
      p.run(w);
      return Status::ok();
    }
    // 64-byte aligned: dense copies of strided tensors live here as well as partial sums.
    detail::HostBuffer ws(DType::kFloat32, {static_cast<int64_t>((p.workspace_bytes + 3) / 4)}, /*zero=*/false);
    p.run(ws.data());
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kInternal, std::string(op) + ": out of memory");
  }
  return Status::ok();
}

std::vector<TensorView> Problem::views() const {
  std::vector<TensorView> v(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (present[i]) v[i] = t[i].view();
  }
  return v;
}

Problem Problem::clone() const {
  Problem p;
  p.present = present;
  p.attrs = attrs;
  for (const detail::HostBuffer& b : t) p.t.push_back(b.clone());
  return p;
}

int OpDesc::tensor_index(const char* n) const {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (std::string(n) == tensors[i].name) return static_cast<int>(i);
  }
  return -1;
}

Attrs OpDesc::default_attrs() const {
  Attrs a(attrs.size());
  for (std::size_t i = 0; i < attrs.size(); ++i) {
    // A NaN default means "none" (the CLI then requires the option): 0 for integers and flags.
    const bool none = std::isnan(attrs[i].def);
    a[i].i = none ? 0 : static_cast<int64_t>(attrs[i].def);
    a[i].f = attrs[i].def;
    a[i].b = !none && attrs[i].def != 0;
    if (attrs[i].kind == AttrKind::kMask) a[i].mask.assign(optional_outputs().size(), true);
  }
  return a;
}

std::vector<int> OpDesc::optional_outputs() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].role == Role::kOut && tensors[i].optional) out.push_back(static_cast<int>(i));
  }
  return out;
}

}  // namespace nnops::ops
