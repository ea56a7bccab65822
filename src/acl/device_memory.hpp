// "Device" memory of the host device: aclrtMalloc/aclrtMallocHost blocks tracked in one registry.
//
// Tracking buys what a plain malloc cannot: copies and kernels check that they stay inside a block,
// wrong or double frees are errors instead of crashes, and a block that a launched task still needs
// (it is "pinned") is only marked freed by aclrtFree; the task then fails with a message instead of
// touching freed memory, and the block is released when the last pin goes.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "acl/acl_base.h"

namespace nnops::acl {

enum class MemKind { kDevice, kHost };

/// A block as seen when it was looked up (gen identifies the allocation; addresses get reused).
struct BlockRef {
  uintptr_t base = 0;
  uint64_t size = 0;
  uint64_t gen = 0;
};

/// Where a byte range [p, p + bytes) lies.
struct Lookup {
  enum Where {
    kUntracked,  ///< outside every block: ordinary host memory
    kInside,     ///< inside a live block
    kOverrun,    ///< starts inside a live block but runs past its end
    kFreed,      ///< inside a block that aclrtFree already released (pending the end of a task)
  } where = kUntracked;
  MemKind kind = MemKind::kDevice;
  BlockRef block;
};

class MemoryRegistry {
 public:
  /// aclrtMalloc / aclrtMallocHost: 64-byte aligned, uninitialized, size > 0.
  aclError allocate(const char* api, MemKind kind, std::size_t size, void** out);
  /// aclrtFree / aclrtFreeHost: p must be the start of a live block of that kind.
  aclError release(const char* api, MemKind kind, void* p);

  Lookup find(const void* p, uint64_t bytes) const;

  /// Keeps a block allocated until unpin; false if the block is gone, reallocated or freed.
  bool pin(const BlockRef& r);
  void unpin(const BlockRef& r) noexcept;
  /// True once aclrtFree released a pinned block (or the block is gone).
  bool freed(const BlockRef& r) const;

  /// aclFinalize: frees every block. Callers make sure no task is running.
  void release_all() noexcept;

  std::size_t live_blocks() const;

 private:
  struct Block {
    uint64_t size;
    uint64_t gen;
    MemKind kind;
    int pins;
    bool freed;
  };
  Lookup find_locked(uintptr_t a, uint64_t bytes) const;

  mutable std::mutex mu_;
  std::map<uintptr_t, Block> blocks_;
  uint64_t next_gen_ = 1;
};

/// The process-wide registry (never destroyed, so it outlives every worker thread).
MemoryRegistry& memory();

const char* alloc_api_name(MemKind kind);

}  // namespace nnops::acl
