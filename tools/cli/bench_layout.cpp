#include "tools/cli/bench_layout.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <new>
#include <utility>

namespace nnops::cli {
namespace {

constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

}  // namespace

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kHuge:
      return "huge";
    case Layout::kOffset:
      return "offset";
    case Layout::kAdjacent:
      return "adjacent";
    case Layout::kMalloc:
      return "malloc";
  }
  return "?";
}

std::optional<Layout> parse_layout(const std::string& s) {
  if (s == "huge") return Layout::kHuge;
  if (s == "offset") return Layout::kOffset;
  if (s == "adjacent") return Layout::kAdjacent;
  if (s == "malloc") return Layout::kMalloc;
  return std::nullopt;
}

Placement::Placement(Layout layout, const std::vector<std::size_t>& bytes) {
  ptrs_.assign(bytes.size(), nullptr);
  if (layout == Layout::kHuge) {
    huge_.reserve(bytes.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      // Whole float32 lanes (HostBuffer rounds its allocation up to its alignment anyway).
      huge_.emplace_back(DType::kFloat32, std::vector<int64_t>{static_cast<int64_t>((bytes[i] + 3) / 4)});
      ptrs_[i] = huge_.back().data();
    }
    return;
  }
  // Slots. Large buffers: a "mapping" of round_up(n + 4 KiB, 4 KiB) (glibc asks mmap for n plus its chunk
  // header and the alignment slack, rounded to pages: n + 4 KiB when n is a multiple of 4 KiB) with the data
  // 64 bytes in (malloc: 16), the k-th one below the (k-1)-th; `offset` leaves 4 KiB + 64 B more between
  // consecutive ones. Small buffers: a heap growing upwards from the bottom of the region, 64-byte aligned data
  // (malloc: 16).
  const std::size_t in = layout == Layout::kMalloc ? 16 : 64;
  std::size_t heap = 0, maps = 0;
  std::vector<std::size_t> slot(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] >= kMmapThreshold) {
      slot[i] = round_up(bytes[i] + kPage, kPage) + (layout == Layout::kOffset ? kPage + 64 : 0);
      maps += slot[i];
    } else {
      heap = round_up(heap + 16, in) + bytes[i];
    }
  }
  const std::size_t heap_bytes = round_up(heap, kPage) + kPage;
  map_bytes_ = heap_bytes + maps + kPage;
  void* m = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  map_ = m;
#ifdef MADV_NOHUGEPAGE
  madvise(map_, map_bytes_, MADV_NOHUGEPAGE);
#endif
  auto* base = static_cast<unsigned char*>(map_);
  std::size_t h = 0;
  std::size_t top = map_bytes_;  // large buffers: downwards from the top
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] >= kMmapThreshold) {
      top -= slot[i];
      ptrs_[i] = base + top + in;
    } else {
      h = round_up(h + 16, in);
      ptrs_[i] = base + h;
      h += bytes[i];
    }
  }
}

void Placement::release() noexcept {
  if (map_ != nullptr) munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
  huge_.clear();
  ptrs_.clear();
}

Placement::~Placement() { release(); }

Placement::Placement(Placement&& o) noexcept { *this = std::move(o); }

Placement& Placement::operator=(Placement&& o) noexcept {
  if (this != &o) {
    release();
    ptrs_ = std::move(o.ptrs_);
    huge_ = std::move(o.huge_);
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
  }
  return *this;
}

}  // namespace nnops::cli
