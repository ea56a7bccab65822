// Where `nnops bench` puts the tensors of a call in memory (--layout). The relative placement of an
// operator's operands changes its speed on real CPUs (docs/performance.md, "Layouts, workloads and probes"),
// so the benchmark places them on purpose, reproducibly, instead of taking whatever the allocator returns:
//
//   huge      each buffer its own HostBuffer: 2 MiB aligned and transparent huge pages (madvise) from 4 MiB
//             on, 64-byte aligned below (what `nnops bench` always did);
//   adjacent  what glibc's aligned_alloc(64, n) gives a fresh process, as PyTorch's tensors get it: buffers
//             of 128 KiB or more each in a private mapping of round_up(n + 4 KiB, 4 KiB) with the data 64
//             bytes in, mappings placed one below the other (the kernel hands out mmap addresses top-down);
//             smaller buffers packed upwards in a heap (16-byte chunk header, 64-byte aligned data). 4 KiB
//             pages, never huge pages;
//   malloc    adjacent with the data 16 bytes in (large buffers) and 16-byte aligned (small ones), as glibc's
//             plain malloc gives it: NumPy's arrays and std::vector's, whose rows then start inside lines;
//   offset    adjacent, but each further large buffer 4 KiB + 64 B further away than the one before it, so
//             that no two large buffers start at the same offset modulo 4 KiB.
//
// adjacent, malloc and offset carve one anonymous mapping (MADV_NOHUGEPAGE) at offsets that depend only on the
// buffer sizes and their order, never on the allocator's state: the same run places the same bytes at the
// same distances every time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "src/core/host_buffer.hpp"

namespace nnops::cli {

enum class Layout { kHuge, kOffset, kAdjacent, kMalloc };

const char* layout_name(Layout l);
std::optional<Layout> parse_layout(const std::string& s);

/// Memory for a list of buffers (sizes in bytes, in allocation order), placed as `layout` says. Contents are
/// zero. Movable, not copyable.
class Placement {
 public:
  Placement() = default;
  Placement(Layout layout, const std::vector<std::size_t>& bytes);
  ~Placement();
  Placement(Placement&& o) noexcept;
  Placement& operator=(Placement&& o) noexcept;
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  void* ptr(std::size_t i) const { return ptrs_[i]; }
  std::size_t size() const { return ptrs_.size(); }

 private:
  void release() noexcept;
  std::vector<void*> ptrs_;
  std::vector<detail::HostBuffer> huge_;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
};

/// Buffers from this size on get a private mapping under `adjacent`, `malloc` and `offset` (glibc's default
/// M_MMAP_THRESHOLD).
inline constexpr std::size_t kMmapThreshold = std::size_t{128} << 10;

}  // namespace nnops::cli
