#include "src/acl/executor.hpp"

#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "src/acl/error.hpp"
#include "src/acl/runtime.hpp"
#include "src/core/layout.hpp"
#include "src/core/parallel.hpp"

namespace nnops::acl {
namespace {

struct Registry {
  std::mutex mu;
  uint64_t next_id = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Executor>> live;
};

Registry& registry() {
  static Registry* r = new Registry;  // leaked on purpose, like the runtime
  return *r;
}

std::string bytes_at(uint64_t bytes, uintptr_t p) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%llu bytes at 0x%llx", static_cast<unsigned long long>(bytes),
                static_cast<unsigned long long>(p));
  return buf;
}

// A launched executor: owns it and the pins on its memory until the task is destroyed.
struct Launched {
  std::unique_ptr<Executor> exec;
  std::vector<Executor::Operand> pinned;
  void* workspace = nullptr;

  Launched() = default;
  Launched(const Launched&) = delete;
  Launched& operator=(const Launched&) = delete;
  ~Launched() {
    for (const Executor::Operand& o : pinned) memory().unpin(o.block);
  }

  TaskError run() {
    // NB: a block freed after this check but while the kernel runs stays allocated until the pins go,
    // so the kernel never touches released memory; it just computes into memory the user gave up.
    for (const Executor::Operand& o : pinned) {
      if (memory().freed(o.block)) {
        return TaskError{ACL_ERROR_RT_AICORE_EXCEPTION,
                         std::string(exec->api) + ": the device memory of " + o.name + " (" +
                             bytes_at(o.block.size, o.block.base) +
                             ") was freed with aclrtFree before the task ran; nothing was computed"};
      }
    }
    if (exec->kernel) exec->kernel(workspace);
    return TaskError{};
  }
};

}  // namespace

aclnnStatus check_not_null(const char* api, std::initializer_list<PointerArg> args) noexcept {
  for (const PointerArg& a : args) {
    if (a.p == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, api, std::string(a.name) + " is null");
  }
  return ACLNN_SUCCESS;
}

Status add_operand(const char* name, const TensorView& view, std::vector<Executor::Operand>* operands) {
  const int64_t n = view.numel();
  if (n <= 0 || view.data() == nullptr) return Status::ok();
  // The bytes a strided view spans (from its lowest address, data(): strides are non-negative).
  const detail::ByteSpan span = detail::byte_span(view);
  const uint64_t bytes = span.hi - span.lo;
  const Lookup l = memory().find(view.data(), bytes);
  const uintptr_t p = reinterpret_cast<uintptr_t>(view.data());
  switch (l.where) {
    case Lookup::kUntracked:
      return Status::ok();
    case Lookup::kInside:
      operands->push_back(Executor::Operand{name, l.block});
      return Status::ok();
    case Lookup::kOverrun:
      return Status(StatusCode::kInvalidArgument, std::string(name) + " needs " + bytes_at(bytes, p) +
                                                      ", past the end of its " + alloc_api_name(l.kind) + " block (" +
                                                      bytes_at(l.block.size, l.block.base) + ")");
    case Lookup::kFreed:
      break;
  }
  return Status(StatusCode::kInvalidArgument, std::string(name) + " points into a block that was already freed (" +
                                                  bytes_at(l.block.size, l.block.base) + ")");
}

aclOpExecutor* register_executor(std::unique_ptr<Executor> e) {
  std::lock_guard<std::mutex> lock(registry().mu);
  const uint64_t id = registry().next_id++;
  registry().live.emplace(id, std::move(e));
  return static_cast<aclOpExecutor*>(encode_handle(id, kExecutorTag));
}

aclnnStatus launch(const char* api, void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                   aclrtStream stream) noexcept {
  return guard_aclnn(api, [&]() -> aclnnStatus {
    if (executor == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, api, "executor is null");
    // Looked up before the registry lock is taken: locks are only ever nested registry -> memory.
    std::shared_ptr<Stream> s = stream ? find_stream(stream) : nullptr;
    const bool ready = stream ? s != nullptr : device_ready();

    auto launched = std::make_shared<Launched>();
    launched->workspace = workspace;
    {
      std::lock_guard<std::mutex> lock(registry().mu);
      uint64_t id = 0;
      const bool tagged = decode_handle(executor, kExecutorTag, &id);
      auto it = tagged ? registry().live.find(id) : registry().live.end();
      if (it == registry().live.end()) {
        if (tagged && id > 0 && id < registry().next_id) {
          return fail(ACLNN_ERR_PARAM_INVALID, api,
                      "executor has already been launched or destroyed; an executor runs once (call the "
                      "GetWorkspaceSize function again for a new one)");
        }
        return fail(ACLNN_ERR_PARAM_INVALID, api, "executor was not returned by a GetWorkspaceSize function");
      }
      Executor& e = *it->second;
      if (std::string(e.api) != api) {
        return fail(ACLNN_ERR_PARAM_INVALID, api,
                    std::string("executor was created by ") + e.phase_one + "; launch it with " + e.api);
      }
      // The workspace: enough bytes, a pointer when any are claimed, aligned for the doubles kept in it.
      if (workspace_size < e.workspace_bytes) {
        return fail(ACLNN_ERR_PARAM_INVALID, api,
                    "workspaceSize is " + std::to_string(workspace_size) + "; the executor needs " +
                        std::to_string(e.workspace_bytes) + " bytes (the size " + e.phase_one + " returned)");
      }
      if (workspace == nullptr && workspace_size > 0) {
        return fail(ACLNN_ERR_PARAM_NULLPTR, api,
                    "workspace is null but workspaceSize is " + std::to_string(workspace_size));
      }
      if (e.workspace_bytes > 0 && reinterpret_cast<uintptr_t>(workspace) % alignof(double) != 0) {
        return fail(ACLNN_ERR_PARAM_INVALID, api, "workspace must be 8-byte aligned (aclrtMalloc blocks are)");
      }
      std::vector<Executor::Operand> to_pin = e.operands;
      if (e.workspace_bytes > 0) {
        const Lookup l = memory().find(workspace, e.workspace_bytes);
        if (l.where == Lookup::kOverrun || l.where == Lookup::kFreed) {
          return fail(ACLNN_ERR_PARAM_INVALID, api,
                      "workspace does not hold " + std::to_string(e.workspace_bytes) + " live bytes: " +
                          (l.where == Lookup::kFreed ? "its block was freed" : "its block ends sooner"));
        }
        if (l.where == Lookup::kInside) to_pin.push_back(Executor::Operand{"workspace", l.block});
      }
      if (!ready) {
        return stream ? fail(ACLNN_ERR_PARAM_INVALID, api,
                             "stream is not a live stream (destroyed, released by aclrtResetDevice/aclFinalize, "
                             "or never created)")
                      : fail(ACLNN_ERR_RUNTIME_ERROR, api, "no device is set: call aclInit and aclrtSetDevice(0)");
      }
      launched->pinned.reserve(to_pin.size());
      for (const Executor::Operand& o : to_pin) {
        if (!memory().pin(o.block)) {
          return fail(ACLNN_ERR_PARAM_INVALID, api,
                      std::string("the device memory of ") + o.name + " was freed after " + e.phase_one);
        }
        launched->pinned.push_back(o);  // reserved: cannot throw, so every pin is undone by ~Launched
      }
      launched->exec = std::move(it->second);
      registry().live.erase(it);
    }

    if (!s) {  // the default stream: run now
      TaskError r = launched->run();
      launched.reset();
      if (!r.ok()) return fail(ACLNN_ERR_RUNTIME_ERROR, api, r.message);
      return ACLNN_SUCCESS;
    }
    detail::release_thread_pool();  // the stream's worker runs the kernel: this thread's pool would slow it
    if (!s->enqueue([launched] { return launched->run(); })) {
      return fail(ACLNN_ERR_RUNTIME_ERROR, api, "the stream was destroyed while the task was being launched");
    }
    return ACLNN_SUCCESS;
  });
}

void destroy_all_executors() noexcept {
  std::unordered_map<uint64_t, std::unique_ptr<Executor>> all;
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    all.swap(registry().live);
  }
}

std::size_t live_executors() {
  std::lock_guard<std::mutex> lock(registry().mu);
  return registry().live.size();
}

}  // namespace nnops::acl

extern "C" aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  using namespace nnops::acl;
  return guard_aclnn("aclDestroyAclOpExecutor", [&]() -> aclnnStatus {
    const char* api = "aclDestroyAclOpExecutor";
    if (executor == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, api, "executor is null");
    std::unique_ptr<Executor> doomed;  // destroyed after the lock is released
    std::lock_guard<std::mutex> lock(registry().mu);
    uint64_t id = 0;
    auto it = decode_handle(executor, kExecutorTag, &id) ? registry().live.find(id) : registry().live.end();
    if (it == registry().live.end()) {
      return fail(ACLNN_ERR_PARAM_INVALID, api,
                  "executor is not a live executor (already launched or destroyed, or never created)");
    }
    doomed = std::move(it->second);
    registry().live.erase(it);
    return ACLNN_SUCCESS;
  });
}
