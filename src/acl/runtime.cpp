// aclInit/aclFinalize, devices, streams and memory calls of the host device.
#include "src/acl/runtime.hpp"

#include <cstring>
#include <mutex>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "acl/acl.h"
#include "nnops/dtype.hpp"
#include "src/acl/c_enum.hpp"
#include "src/acl/device_memory.hpp"
#include "src/acl/error.hpp"
#include "src/acl/executor.hpp"

namespace nnops::acl {
namespace {

struct Runtime {
  std::mutex mu;
  bool initialized = false;
  int device_refs = 0;
  uint64_t next_stream_id = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Stream>> streams;
};

// Leaked on purpose: it must outlive every thread that may still call in during process exit.
Runtime& rt() {
  static Runtime* r = new Runtime;
  return *r;
}

// Removes every stream from the table (under the lock) and shuts them down (outside it, since their
// tasks may call into the runtime). Returns the first unreported failure.
TaskError destroy_all_streams() {
  std::vector<std::shared_ptr<Stream>> all;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    for (auto& kv : rt().streams) all.push_back(std::move(kv.second));
    rt().streams.clear();
  }
  TaskError first;
  for (auto& s : all) {
    TaskError e = s->shutdown();
    if (first.ok() && !e.ok()) first = std::move(e);
  }
  return first;
}

aclError report(const char* api, TaskError e) {
  if (e.ok()) return ACL_SUCCESS;
  return fail(e.code, api, e.message);
}

aclError check_device_id(const char* api, int32_t id) {
  if (id == 0) return ACL_SUCCESS;
  return fail(ACL_ERROR_RT_INVALID_DEVICEID, api,
              "device " + std::to_string(id) + " does not exist; nnops has one device, 0 (the host CPU)");
}

aclError require_device(const char* api) {
  std::lock_guard<std::mutex> lock(rt().mu);
  if (!rt().initialized) return fail(ACL_ERROR_UNINITIALIZE, api, "aclInit has not been called");
  if (rt().device_refs == 0) return fail(ACL_ERROR_RT_CONTEXT_NULL, api, "no device is set: call aclrtSetDevice(0)");
  return ACL_SUCCESS;
}

// What aclrtMemcpy expects of one side of a copy.
enum class Side { kHost, kDevice, kAny };

aclError check_side(const char* api, const char* name, const void* p, std::size_t count, Side want) {
  const Lookup l = memory().find(p, count);
  const bool device = l.where != Lookup::kUntracked && l.kind == MemKind::kDevice;
  if (l.where == Lookup::kFreed) {
    return fail(ACL_ERROR_INVALID_PARAM, api, std::string(name) + " points into a block that was already freed");
  }
  if (want == Side::kDevice && !device) {
    return fail(ACL_ERROR_INVALID_PARAM, api,
                std::string(name) + " is not device memory (allocate it with aclrtMalloc), but the copy kind says so");
  }
  if (want == Side::kHost && device) {
    return fail(ACL_ERROR_INVALID_PARAM, api,
                std::string(name) + " is device memory (from aclrtMalloc), but the copy kind says host");
  }
  if (l.where == Lookup::kOverrun) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(p) - l.block.base;
    return fail(ACL_ERROR_INVALID_PARAM, api,
                std::string(name) + " + " + std::to_string(count) + " bytes runs past the end of its " +
                    alloc_api_name(l.kind) + " block (" + std::to_string(l.block.size) + " bytes; " + name +
                    " is at byte " + std::to_string(at) + ")");
  }
  return ACL_SUCCESS;
}

}  // namespace

void* encode_handle(uint64_t id, unsigned tag) { return reinterpret_cast<void*>((id << 4) | tag); }

bool decode_handle(const void* h, unsigned tag, uint64_t* id) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(h);
  *id = 0;
  if ((v & 0xF) != tag) return false;
  *id = v >> 4;
  return true;
}

std::shared_ptr<Stream> find_stream(aclrtStream handle) {
  uint64_t id = 0;
  if (!decode_handle(handle, kStreamTag, &id)) return nullptr;
  std::lock_guard<std::mutex> lock(rt().mu);
  auto it = rt().streams.find(id);
  return it == rt().streams.end() ? nullptr : it->second;
}

bool device_ready() {
  std::lock_guard<std::mutex> lock(rt().mu);
  return rt().initialized && rt().device_refs > 0;
}

bool testing::enqueue(aclrtStream stream, Task task) {
  std::shared_ptr<Stream> s = find_stream(stream);
  return s && s->enqueue(std::move(task));
}

}  // namespace nnops::acl

using nnops::acl::fail;
using nnops::acl::guard_acl;
using nnops::acl::rt;

extern "C" {

aclError aclInit(const char* /*configPath: nothing to configure*/) {
  return guard_acl("aclInit", [&]() -> aclError {
    std::lock_guard<std::mutex> lock(rt().mu);
    if (rt().initialized) return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "already initialized");
    rt().initialized = true;
    return ACL_SUCCESS;
  });
}

aclError aclFinalize(void) {
  return guard_acl("aclFinalize", [&]() -> aclError {
    {
      std::lock_guard<std::mutex> lock(rt().mu);
      if (!rt().initialized) return fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize", "not initialized");
      rt().initialized = false;
      rt().device_refs = 0;
    }
    // Streams first: their tasks hold executors' results and pins on memory.
    nnops::acl::destroy_all_streams();
    nnops::acl::destroy_all_executors();
    nnops::acl::memory().release_all();
    return ACL_SUCCESS;
  });
}

aclError aclrtSetDevice(int32_t deviceId) {
  return guard_acl("aclrtSetDevice", [&]() -> aclError {
    if (aclError e = nnops::acl::check_device_id("aclrtSetDevice", deviceId)) return e;
    std::lock_guard<std::mutex> lock(rt().mu);
    if (!rt().initialized) return fail(ACL_ERROR_UNINITIALIZE, "aclrtSetDevice", "aclInit has not been called");
    ++rt().device_refs;
    return ACL_SUCCESS;
  });
}

aclError aclrtResetDevice(int32_t deviceId) {
  return guard_acl("aclrtResetDevice", [&]() -> aclError {
    if (aclError e = nnops::acl::check_device_id("aclrtResetDevice", deviceId)) return e;
    {
      std::lock_guard<std::mutex> lock(rt().mu);
      if (rt().device_refs == 0) return ACL_SUCCESS;  // nothing set: nothing to release
      if (--rt().device_refs > 0) return ACL_SUCCESS;
    }
    // The last reference releases the device's streams, as in CANN.
    return nnops::acl::report("aclrtResetDevice", nnops::acl::destroy_all_streams());
  });
}

aclError aclrtGetDevice(int32_t* deviceId) {
  return guard_acl("aclrtGetDevice", [&]() -> aclError {
    if (deviceId == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice", "deviceId is null");
    if (aclError e = nnops::acl::require_device("aclrtGetDevice")) return e;
    *deviceId = 0;
    return ACL_SUCCESS;
  });
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  return guard_acl("aclrtGetDeviceCount", [&]() -> aclError {
    if (count == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount", "count is null");
    *count = 1;
    return ACL_SUCCESS;
  });
}

aclError aclrtCreateStream(aclrtStream* stream) {
  return guard_acl("aclrtCreateStream", [&]() -> aclError {
    if (stream == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream", "stream is null");
    *stream = nullptr;
    if (aclError e = nnops::acl::require_device("aclrtCreateStream")) return e;
    std::shared_ptr<nnops::acl::Stream> s;
    try {
      s = std::make_shared<nnops::acl::Stream>();
    } catch (const std::system_error& e) {
      return fail(ACL_ERROR_RT_NO_STREAM_RESOURCE, "aclrtCreateStream",
                  std::string("cannot start the stream's worker thread: ") + e.what());
    }
    std::lock_guard<std::mutex> lock(rt().mu);
    const uint64_t id = rt().next_stream_id++;
    rt().streams.emplace(id, std::move(s));
    *stream = nnops::acl::encode_handle(id, nnops::acl::kStreamTag);
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyStream(aclrtStream stream) {
  return guard_acl("aclrtDestroyStream", [&]() -> aclError {
    if (stream == nullptr) {
      return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream",
                  "stream is null (the default stream cannot be destroyed)");
    }
    uint64_t id = 0;
    std::shared_ptr<nnops::acl::Stream> s;
    if (nnops::acl::decode_handle(stream, nnops::acl::kStreamTag, &id)) {
      std::lock_guard<std::mutex> lock(rt().mu);
      auto it = rt().streams.find(id);
      if (it != rt().streams.end()) {
        s = std::move(it->second);
        rt().streams.erase(it);
      }
    }
    if (!s) {
      return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream",
                  "stream is not a live stream (already destroyed, released by aclrtResetDevice/aclFinalize, or "
                  "never created)");
    }
    // Waits for the queued tasks and joins the worker; a failure nobody synchronized for is reported here.
    return nnops::acl::report("aclrtDestroyStream", s->shutdown());
  });
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return guard_acl("aclrtSynchronizeStream", [&]() -> aclError {
    if (stream == nullptr) return ACL_SUCCESS;  // the default stream runs its tasks when they are launched
    std::shared_ptr<nnops::acl::Stream> s = nnops::acl::find_stream(stream);
    if (!s) {
      return fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream",
                  "stream is not a live stream (destroyed or never created)");
    }
    return nnops::acl::report("aclrtSynchronizeStream", s->synchronize());
  });
}

aclError aclrtSynchronizeDevice(void) {
  return guard_acl("aclrtSynchronizeDevice", [&]() -> aclError {
    std::vector<std::shared_ptr<nnops::acl::Stream>> all;
    {
      std::lock_guard<std::mutex> lock(rt().mu);
      for (auto& kv : rt().streams) all.push_back(kv.second);
    }
    nnops::acl::TaskError first;
    for (auto& s : all) {
      nnops::acl::TaskError e = s->synchronize();
      if (e.ok()) continue;
      if (first.ok()) {
        first = std::move(e);
      } else {
        nnops::acl::push_error("aclrtSynchronizeDevice: " + e.message);  // keep every stream's reason
      }
    }
    return nnops::acl::report("aclrtSynchronizeDevice", std::move(first));
  });
}

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return guard_acl("aclrtMalloc", [&]() -> aclError {
    // Placement policies mean nothing on the host; reject only values CANN does not define.
    const unsigned p = static_cast<unsigned>(nnops::acl::enum_int(policy));
    const unsigned flags =
        ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH | ACL_MEM_ACCESS_USER_SPACE_READONLY;
    if ((p & 0xFFu) > ACL_MEM_MALLOC_HUGE1G_ONLY_P2P || (p & ~0xFFu & ~flags) != 0) {
      if (devPtr) *devPtr = nullptr;
      return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc",
                  "policy " + std::to_string(p) + " is not an aclrtMemMallocPolicy");
    }
    if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc", "devPtr is null");
    *devPtr = nullptr;
    if (aclError e = nnops::acl::require_device("aclrtMalloc")) return e;
    return nnops::acl::memory().allocate("aclrtMalloc", nnops::acl::MemKind::kDevice, size, devPtr);
  });
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  return guard_acl("aclrtMallocHost", [&]() -> aclError {
    if (hostPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost", "hostPtr is null");
    *hostPtr = nullptr;
    if (aclError e = nnops::acl::require_device("aclrtMallocHost")) return e;
    return nnops::acl::memory().allocate("aclrtMallocHost", nnops::acl::MemKind::kHost, size, hostPtr);
  });
}

aclError aclrtFree(void* devPtr) {
  return guard_acl("aclrtFree",
                   [&] { return nnops::acl::memory().release("aclrtFree", nnops::acl::MemKind::kDevice, devPtr); });
}

aclError aclrtFreeHost(void* hostPtr) {
  return guard_acl("aclrtFreeHost",
                   [&] { return nnops::acl::memory().release("aclrtFreeHost", nnops::acl::MemKind::kHost, hostPtr); });
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  using nnops::acl::Side;
  return guard_acl("aclrtMemcpy", [&]() -> aclError {
    const char* api = "aclrtMemcpy";
    if (dst == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "dst is null");
    if (src == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "src is null");
    if (count > destMax) {
      return fail(ACL_ERROR_INVALID_PARAM, api,
                  "count " + std::to_string(count) + " exceeds destMax " + std::to_string(destMax));
    }
    Side want_dst = Side::kAny, want_src = Side::kAny;
    const int k = nnops::acl::enum_int(kind);
    switch (k) {
      case ACL_MEMCPY_HOST_TO_HOST:
        want_dst = Side::kHost, want_src = Side::kHost;
        break;
      case ACL_MEMCPY_HOST_TO_DEVICE:
      case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE:
        want_dst = Side::kDevice, want_src = Side::kHost;
        break;
      case ACL_MEMCPY_DEVICE_TO_HOST:
        want_dst = Side::kHost, want_src = Side::kDevice;
        break;
      case ACL_MEMCPY_DEVICE_TO_DEVICE:
      case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
      case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE:
        want_dst = Side::kDevice, want_src = Side::kDevice;
        break;
      case ACL_MEMCPY_DEFAULT:
        break;
      default:
        return fail(ACL_ERROR_INVALID_PARAM, api, "kind " + std::to_string(k) + " is not an aclrtMemcpyKind");
    }
    // Both sides are checked against destMax's claim too: dst must really hold destMax bytes when tracked.
    if (aclError e = nnops::acl::check_side(api, "dst", dst, count, want_dst)) return e;
    if (aclError e = nnops::acl::check_side(api, "src", src, count, want_src)) return e;
    if (count > 0) std::memmove(dst, src, count);  // overlapping ranges are copied as if through a buffer
    return ACL_SUCCESS;
  });
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  return guard_acl("aclrtMemset", [&]() -> aclError {
    const char* api = "aclrtMemset";
    if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "devPtr is null");
    if (count > maxCount) {
      return fail(ACL_ERROR_INVALID_PARAM, api,
                  "count " + std::to_string(count) + " exceeds maxCount " + std::to_string(maxCount));
    }
    if (aclError e = nnops::acl::check_side(api, "devPtr", devPtr, count, nnops::acl::Side::kAny)) return e;
    if (count > 0) std::memset(devPtr, value, count);
    return ACL_SUCCESS;
  });
}

float aclFloat16ToFloat(aclFloat16 value) { return nnops::half_bits_to_float(value); }

aclFloat16 aclFloatToFloat16(float value) { return nnops::float_to_half_bits(value); }

}  // extern "C"
