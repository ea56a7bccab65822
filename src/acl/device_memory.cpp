#include "src/acl/device_memory.hpp"

#include <cstdio>
#include <cstdlib>

#include "src/acl/error.hpp"

namespace nnops::acl {
namespace {

constexpr std::size_t kAlign = 64;

std::string hex(uintptr_t p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(p));
  return buf;
}

}  // namespace

const char* alloc_api_name(MemKind kind) { return kind == MemKind::kDevice ? "aclrtMalloc" : "aclrtMallocHost"; }

MemoryRegistry& memory() {
  static MemoryRegistry* r = new MemoryRegistry;  // leaked on purpose: see the header
  return *r;
}

aclError MemoryRegistry::allocate(const char* api, MemKind kind, std::size_t size, void** out) {
  if (out == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "the output pointer is null");
  *out = nullptr;
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, api, "size is 0; expected at least 1 byte");
  if (size > SIZE_MAX - kAlign) {
    return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, api, "cannot allocate " + std::to_string(size) + " bytes");
  }
  const std::size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) {
    return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, api, "cannot allocate " + std::to_string(size) + " bytes");
  }
  try {
    std::lock_guard<std::mutex> lock(mu_);
    blocks_[reinterpret_cast<uintptr_t>(p)] = Block{size, next_gen_++, kind, 0, false};
  } catch (...) {
    std::free(p);
    throw;
  }
  *out = p;
  return ACL_SUCCESS;
}

aclError MemoryRegistry::release(const char* api, MemKind kind, void* p) {
  if (p == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "the pointer is null");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::unique_lock<std::mutex> lock(mu_);
  auto it = blocks_.find(a);
  if (it == blocks_.end() || it->second.freed) {
    const Lookup l = find_locked(a, 0);
    if (l.where == Lookup::kInside) {
      return fail(ACL_ERROR_INVALID_PARAM, api,
                  hex(a) + " points " + std::to_string(a - l.block.base) + " bytes into a block; pass its start " +
                      hex(l.block.base));
    }
    return fail(ACL_ERROR_INVALID_PARAM, api,
                hex(a) + " was not allocated by " + alloc_api_name(kind) + " or was already freed");
  }
  Block& b = it->second;
  if (b.kind != kind) {
    return fail(ACL_ERROR_INVALID_PARAM, api,
                hex(a) + " was allocated by " + alloc_api_name(b.kind) + "; free it with " +
                    (b.kind == MemKind::kDevice ? "aclrtFree" : "aclrtFreeHost"));
  }
  if (b.pins > 0) {
    b.freed = true;  // the last unpin releases it
    return ACL_SUCCESS;
  }
  blocks_.erase(it);
  lock.unlock();
  std::free(p);
  return ACL_SUCCESS;
}

Lookup MemoryRegistry::find(const void* p, uint64_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  return find_locked(reinterpret_cast<uintptr_t>(p), bytes);
}

Lookup MemoryRegistry::find_locked(uintptr_t a, uint64_t bytes) const {
  Lookup l;
  auto it = blocks_.upper_bound(a);
  if (it == blocks_.begin()) return l;
  --it;
  const Block& b = it->second;
  if (a - it->first >= b.size) return l;  // past the end (a >= base is known)
  l.kind = b.kind;
  l.block = BlockRef{it->first, b.size, b.gen};
  if (b.freed) {
    l.where = Lookup::kFreed;
  } else if (bytes > b.size - (a - it->first)) {
    l.where = Lookup::kOverrun;
  } else {
    l.where = Lookup::kInside;
  }
  return l;
}

bool MemoryRegistry::pin(const BlockRef& r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(r.base);
  if (it == blocks_.end() || it->second.gen != r.gen || it->second.freed) return false;
  ++it->second.pins;
  return true;
}

void MemoryRegistry::unpin(const BlockRef& r) noexcept {
  void* to_free = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(r.base);
    if (it == blocks_.end() || it->second.gen != r.gen) return;
    if (--it->second.pins == 0 && it->second.freed) {
      to_free = reinterpret_cast<void*>(it->first);
      blocks_.erase(it);
    }
  }
  std::free(to_free);
}

bool MemoryRegistry::freed(const BlockRef& r) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(r.base);
  return it == blocks_.end() || it->second.gen != r.gen || it->second.freed;
}

void MemoryRegistry::release_all() noexcept {
  std::map<uintptr_t, Block> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(blocks_);
  }
  for (const auto& [base, block] : all) std::free(reinterpret_cast<void*>(base));
}

std::size_t MemoryRegistry::live_blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& kv : blocks_) n += kv.second.freed ? 0 : 1;
  return n;
}

}  // namespace nnops::acl
