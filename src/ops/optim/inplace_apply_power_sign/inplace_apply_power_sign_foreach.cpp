// The multi-tensor PowerSign step (an optimizer's parameter list in one call): validate every entry as the
// single call does, refuse any cross-entry overlap, then update every dense entry in one parallel region
// (RunPowerSignForeach) and the other layouts through the single call's dense copies.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "nnops/ops/inplace_apply_power_sign.hpp"
#include "src/core/check.hpp"
#include "src/core/host_buffer.hpp"
#include "src/core/layout.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_foreach_impl.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"

namespace nnops {
namespace {

constexpr const char* kForeachName = "inplace_apply_power_sign_foreach";

// "inplace_apply_power_sign: m has shape [3]; ..." -> "inplace_apply_power_sign_foreach: entry 2: m has ...".
Status entry_error(const Status& s, size_t i) {
  std::string msg = s.message();
  const std::string prefix = std::string(power_sign::kOpName) + ": ";
  if (msg.compare(0, prefix.size(), prefix) == 0) msg.erase(0, prefix.size());
  return Status(s.code(), std::string(kForeachName) + ": entry " + std::to_string(i) + " (vars[" + std::to_string(i) +
                              "], ms[" + std::to_string(i) + "], grads[" + std::to_string(i) + "]): " + msg);
}

// The four scalars stored in one dtype, as the single call receives them from a caller that rounded its
// double values to T (store_from_double: to nearest, ties to even, one rounding).
struct TypedScalars {
  alignas(8) unsigned char bytes[4][4] = {};
  TensorView views[4];
  TypedScalars(DType t, const double (&v)[4]) {
    const int64_t one = 1;
    for (int k = 0; k < 4; ++k) {
      store_from_double(bytes[k], t, 0, v[k]);
      views[k] = TensorView::contiguous(bytes[k], t, &one, 1);
    }
  }
};

// One span of memory an entry touches: written (var, m) or read (grad).
struct Touch {
  detail::ByteSpan span;
  size_t entry;
  int which;  // 0 var, 1 m, 2 grad
  const TensorView* view;
};

std::string touch_name(const Touch& t) {
  static const char* const kNames[] = {"vars", "ms", "grads"};
  return std::string(kNames[t.which]) + "[" + std::to_string(t.entry) + "]";
}

// No entry writes memory that another entry reads or writes. Sorted by start address, each span is compared
// with the earlier spans that reach past its start (normally none), so a parameter list costs O(n log n).
Status check_cross_overlap(const TensorView* vars, const TensorView* ms, const TensorView* grads, size_t count) {
  std::vector<Touch> touches;
  touches.reserve(3 * count);
  for (size_t i = 0; i < count; ++i) {
    const TensorView* v[3] = {&vars[i], &ms[i], &grads[i]};
    for (int w = 0; w < 3; ++w) {
      const detail::ByteSpan s = detail::byte_span(*v[w]);
      if (!s.empty()) touches.push_back({s, i, w, v[w]});
    }
  }
  std::sort(touches.begin(), touches.end(), [](const Touch& a, const Touch& b) {
    return a.span.lo != b.span.lo ? a.span.lo < b.span.lo : a.entry < b.entry;
  });
  std::vector<const Touch*> active;
  for (const Touch& t : touches) {
    active.erase(std::remove_if(active.begin(), active.end(), [&](const Touch* a) { return a->span.hi <= t.span.lo; }),
                 active.end());
    for (const Touch* a : active) {
      if (a->entry == t.entry || (a->which == 2 && t.which == 2)) continue;  // checked by check(); reads
      if (detail::views_overlap(*a->view, *t.view)) {
        const Touch& first = a->entry < t.entry ? *a : t;
        const Touch& second = a->entry < t.entry ? t : *a;
        return detail::overlap_error(kForeachName, touch_name(first).c_str(), touch_name(second).c_str());
      }
    }
    active.push_back(&t);
  }
  return Status::ok();
}

}  // namespace

Status inplace_apply_power_sign_foreach(const TensorView* vars, const TensorView* ms, const TensorView* grads,
                                        size_t count, double lr, double logbase, double sign_decay, double beta,
                                        bool use_locking, const Context& ctx) {
  if (count == 0) return Status::ok();
  if (vars == nullptr || ms == nullptr || grads == nullptr) {
    return Status(StatusCode::kNullPointer, std::string(kForeachName) + ": vars, ms and grads must not be null");
  }
  try {
    const double values[4] = {lr, logbase, sign_decay, beta};
    const TypedScalars typed[3] = {TypedScalars(DType::kFloat32, values), TypedScalars(DType::kFloat16, values),
                                   TypedScalars(DType::kBFloat16, values)};
    auto scalars_for = [&](DType t) -> const TypedScalars& {
      return typed[t == DType::kFloat16 ? 1 : t == DType::kBFloat16 ? 2 : 0];
    };

    // 1. Every entry as the single call checks it (its scalars in its own dtype).
    std::vector<power_sign::Args> args(count);
    for (size_t i = 0; i < count; ++i) {
      const TypedScalars& s = scalars_for(vars[i].dtype());
      if (Status st = power_sign::check(vars[i], ms[i], s.views[0], s.views[1], s.views[2], s.views[3], grads[i],
                                        use_locking, &args[i]);
          !st) {
        return entry_error(st, i);
      }
    }
    // 2. Entries must not touch each other's memory (grads may be shared).
    if (Status st = check_cross_overlap(vars, ms, grads, count); !st) return st;

    // 3. Plans. Dense entries (var, m and grad in one dense layout) join the one region; any other layout is
    // updated by the single call's closure (dense copies in a workspace allocated now, before any write).
    int64_t total = 0;
    for (const power_sign::Args& a : args) total += a.numel;
    const int64_t by_size = std::max<int64_t>(1, total / power_sign::kMinElementsPerThread);
    const Context one_region{static_cast<int>(std::min<int64_t>(by_size, resolve_num_threads(ctx)))};
    std::vector<power_sign::Plan> plans;
    std::vector<void*> var_ptrs, m_ptrs;
    std::vector<const void*> grad_ptrs;
    std::vector<int64_t> first_block{0};
    struct Packed {
      ops::Prepared prepared;
      std::unique_ptr<detail::HostBuffer> workspace;
    };
    std::vector<Packed> packed;
    for (size_t i = 0; i < count; ++i) {
      const power_sign::Args& a = args[i];
      if (a.numel == 0) continue;
      const bool flat = detail::same_layout(vars[i], ms[i]) && detail::same_layout(vars[i], grads[i]) &&
                        detail::is_dense(vars[i]);
      if (flat) {
        plans.push_back(power_sign::make_plan(a, one_region));
        var_ptrs.push_back(a.var);
        m_ptrs.push_back(a.m);
        grad_ptrs.push_back(a.grad);
        first_block.push_back(first_block.back() +
                              (a.numel + power_sign::kThreadBlock - 1) / power_sign::kThreadBlock);
        continue;
      }
      // The locks (if any) are taken below for every entry at once, so the closure takes none.
      const TypedScalars& s = scalars_for(a.dtype);
      const TensorView t[] = {vars[i], ms[i], s.views[0], s.views[1], s.views[2], s.views[3], grads[i]};
      ops::Attrs no_lock(1);
      Packed p;
      if (Status st = power_sign::prepare(t, no_lock, ctx, &p.prepared); !st) return entry_error(st, i);
      if (p.prepared.workspace_bytes > 0) {
        p.workspace = std::make_unique<detail::HostBuffer>(
            DType::kFloat32, std::vector<int64_t>{static_cast<int64_t>((p.prepared.workspace_bytes + 3) / 4)},
            /*zero=*/false);
      }
      packed.push_back(std::move(p));
    }

    // 4. use_locking: every var's stripe, in address order (so two foreach calls cannot deadlock; a single
    // call holds one stripe only).
    std::vector<std::mutex*> stripes;
    if (use_locking) {
      for (size_t i = 0; i < count; ++i) stripes.push_back(&power_sign::var_lock(vars[i].data()));
      std::sort(stripes.begin(), stripes.end());
      stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
    }
    std::vector<std::unique_lock<std::mutex>> held;
    held.reserve(stripes.size());
    for (std::mutex* mu : stripes) held.emplace_back(*mu);

    // 5. Run: nothing below can fail.
    const power_sign::ForeachBatch batch{plans.data(),       var_ptrs.data(), m_ptrs.data(),     grad_ptrs.data(),
                                         first_block.data(), plans.size(),    one_region.num_threads};
    power_sign::run_foreach(batch);
    for (Packed& p : packed) {
      if (p.prepared.run) p.prepared.run(p.workspace ? p.workspace->data() : nullptr);
    }
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kInternal, std::string(kForeachName) + ": out of memory");
  }
  return Status::ok();
}

}  // namespace nnops
