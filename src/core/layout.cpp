#include "src/core/layout.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "nnops/dtype.hpp"
#include "src/core/parallel.hpp"

namespace nnops::detail {
namespace {

struct Dim {
  int64_t size, stride;
};

// The dims that matter for addressing: size > 1 and stride != 0 (a broadcast dim adds no address).
// `empty` is set when some dim is 0.
std::vector<Dim> addressing_dims(const TensorView& v, bool* empty) {
  std::vector<Dim> d;
  *empty = false;
  for (int i = 0; i < v.rank(); ++i) {
    if (v.dim(i) == 0) *empty = true;
    if (v.dim(i) > 1 && v.stride(i) != 0) d.push_back({v.dim(i), v.stride(i)});
  }
  return d;
}

// Nested test on a list of dims (see is_nested).
bool nested(std::vector<Dim> d) {
  std::sort(d.begin(), d.end(), [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  int64_t extent = 0;
  for (const Dim& x : d) {
    if (x.stride <= extent) return false;
    extent += (x.size - 1) * x.stride;  // no overflow: check_tensor bounded the total
  }
  return true;
}

// For nested dims sorted by decreasing stride: the largest element offset <= target (target >= 0).
int64_t largest_offset_at_most(const std::vector<Dim>& desc, int64_t target) {
  int64_t rem = target, off = 0;
  for (const Dim& x : desc) {
    const int64_t i = std::min(x.size - 1, rem / x.stride);
    off += i * x.stride;
    rem -= i * x.stride;
  }
  return off;
}

std::vector<Dim> sorted_desc(std::vector<Dim> d) {
  std::sort(d.begin(), d.end(), [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  return d;
}

// Does the nested view (base, element size es, dims sorted by decreasing stride) have an element touching a byte
// of [lo, hi)?
bool touches(uintptr_t base, std::size_t es, const std::vector<Dim>& desc, uintptr_t lo, uintptr_t hi) {
  if (hi <= base) return false;
  const uint64_t last_byte = hi - 1 - base;  // relative to base
  const int64_t off = largest_offset_at_most(desc, static_cast<int64_t>(last_byte / es));
  return base + static_cast<uintptr_t>(off + 1) * es > lo;
}

// The dims of a view merged where possible (row-major, outer to inner), size-1 dims dropped; at least one dim.
std::vector<Dim> coalesced(const TensorView& v) {
  std::vector<Dim> d;
  for (int i = 0; i < v.rank(); ++i) {
    if (v.dim(i) == 1) continue;
    if (!d.empty() && d.back().stride == v.stride(i) * v.dim(i)) {
      d.back() = {d.back().size * v.dim(i), v.stride(i)};
    } else {
      d.push_back({v.dim(i), v.stride(i)});
    }
  }
  if (d.empty()) d.push_back({1, 1});
  return d;
}

// Copies between a strided view and a dense buffer, one innermost row at a time. kToDense: strided -> dense.
template <typename E, bool kToDense>
void copy_rows(const std::vector<Dim>& d, E* strided, E* dense, int64_t row0, int64_t row1) {
  const int r = static_cast<int>(d.size());
  const Dim inner = d[r - 1];
  // Odometer over the outer dims, started at row0.
  std::vector<int64_t> idx(r - 1, 0);
  int64_t rem = row0, off = 0;
  for (int k = r - 2; k >= 0; --k) {
    idx[k] = rem % d[k].size;
    rem /= d[k].size;
    off += idx[k] * d[k].stride;
  }
  for (int64_t row = row0; row < row1; ++row) {
    E* s = strided + off;
    E* q = dense + row * inner.size;
    if (inner.stride == 1) {
      if (kToDense) {
        std::memcpy(q, s, static_cast<std::size_t>(inner.size) * sizeof(E));
      } else {
        std::memcpy(s, q, static_cast<std::size_t>(inner.size) * sizeof(E));
      }
    } else {
      for (int64_t j = 0; j < inner.size; ++j) {
        if (kToDense) {
          q[j] = s[j * inner.stride];
        } else {
          s[j * inner.stride] = q[j];
        }
      }
    }
    for (int k = r - 2; k >= 0; --k) {  // next row
      if (++idx[k] < d[k].size) {
        off += d[k].stride;
        break;
      }
      off -= (d[k].size - 1) * d[k].stride;
      idx[k] = 0;
    }
  }
}

template <bool kToDense>
void copy_dense(const TensorView& v, void* dense, int threads) {
  const int64_t n = v.numel();
  if (n <= 0) return;
  const std::vector<Dim> d = coalesced(v);
  const int64_t rows = n / d.back().size;
  // Below ~1 MiB a copy is faster than starting threads.
  if (static_cast<uint64_t>(n) * dtype_size(v.dtype()) < (uint64_t{1} << 20)) threads = 1;
  parallel_region(threads, [&](int tid, int nt) {
    const auto [r0, r1] = split_range(rows, nt, tid);
    if (r0 >= r1) return;
    if (dtype_size(v.dtype()) == 4) {
      copy_rows<uint32_t, kToDense>(d, static_cast<uint32_t*>(v.data()), static_cast<uint32_t*>(dense), r0, r1);
    } else {
      copy_rows<uint16_t, kToDense>(d, static_cast<uint16_t*>(v.data()), static_cast<uint16_t*>(dense), r0, r1);
    }
  });
}

}  // namespace

int64_t max_offset(const TensorView& v, bool* overflow) {
  if (overflow) *overflow = false;
  int64_t off = 0;
  for (int i = 0; i < v.rank(); ++i) {
    if (v.dim(i) <= 0) return -1;
  }
  for (int i = 0; i < v.rank(); ++i) {
    int64_t reach = 0;
    if (__builtin_mul_overflow(v.dim(i) - 1, v.stride(i), &reach) || __builtin_add_overflow(off, reach, &off)) {
      if (overflow) *overflow = true;
      return -1;
    }
  }
  return off;
}

ByteSpan byte_span(const TensorView& v) {
  const int64_t m = max_offset(v);
  if (m < 0) return {};
  const uintptr_t lo = reinterpret_cast<uintptr_t>(v.data());
  return {lo, lo + static_cast<uintptr_t>(m + 1) * dtype_size(v.dtype())};
}

bool is_nested(const TensorView& v) {
  bool empty;
  std::vector<Dim> d = addressing_dims(v, &empty);
  if (empty) return true;
  // A broadcast dim (stride 0, size > 1) makes elements share an address.
  for (int i = 0; i < v.rank(); ++i) {
    if (v.dim(i) > 1 && v.stride(i) == 0) return false;
  }
  return nested(std::move(d));
}

bool is_dense(const TensorView& v) {
  if (!is_nested(v)) return false;
  const int64_t n = v.numel();
  return n == 0 || max_offset(v) + 1 == n;
}

bool is_channels_last(const TensorView& v) {
  const int r = v.rank();
  if (r < 3 || !v.rank_ok()) return false;
  for (int i = 0; i < r; ++i) {
    if (v.dim(i) == 0) return true;  // addresses nothing: any layout describes it
  }
  auto ok = [&](int i, int64_t want) { return v.dim(i) == 1 || v.stride(i) == want; };
  int64_t expect = 1;
  if (!ok(1, expect)) return false;
  expect = v.dim(1);
  for (int i = r - 1; i >= 2; --i) {
    if (!ok(i, expect)) return false;
    expect *= v.dim(i);
  }
  return ok(0, expect);
}

std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& shape) {
  const int r = static_cast<int>(shape.size());
  std::vector<int64_t> s(r, 1);
  int64_t acc = std::max<int64_t>(shape[1], 1);
  for (int i = r - 1; i >= 2; --i) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  s[0] = acc;
  return s;
}

bool same_layout(const TensorView& a, const TensorView& b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i) {
    if (a.dim(i) != b.dim(i)) return false;
  }
  for (int i = 0; i < a.rank(); ++i) {
    if (a.dim(i) == 0) return true;
  }
  for (int i = 0; i < a.rank(); ++i) {
    if (a.dim(i) != 1 && a.stride(i) != b.stride(i)) return false;
  }
  return true;
}

bool views_overlap(const TensorView& a, const TensorView& b) {
  const ByteSpan sa = byte_span(a), sb = byte_span(b);
  if (sa.empty() || sb.empty()) return false;
  if (!(sa.lo < sb.hi && sb.lo < sa.hi)) return false;
  bool ea_empty, eb_empty;
  const std::vector<Dim> da = addressing_dims(a, &ea_empty), db = addressing_dims(b, &eb_empty);
  const std::size_t ea = dtype_size(a.dtype()), eb = dtype_size(b.dtype());
  // Every element of a starts at a multiple of g bytes from a's start, and likewise for b. Element ranges
  // [x, x + ea) and [y, y + eb) can only meet if (x - y) mod g is below eb or above g - ea.
  uint64_t g = 0;
  for (const Dim& d : da) g = std::gcd(g, static_cast<uint64_t>(d.stride) * ea);
  for (const Dim& d : db) g = std::gcd(g, static_cast<uint64_t>(d.stride) * eb);
  if (g > 0) {
    const uint64_t r = (static_cast<uint64_t>(sa.lo) - static_cast<uint64_t>(sb.lo)) % g;
    if (!(r < eb || r > g - ea)) return false;
  }
  if (!nested(da) || !nested(db)) return true;  // cannot decide cheaply: say yes
  const std::vector<Dim> a_desc = sorted_desc(da), b_desc = sorted_desc(db);
  // A dense view touches every byte of its span: the question is whether the other view touches one.
  if (is_dense(a)) return touches(sb.lo, eb, b_desc, sa.lo, sa.hi);
  if (is_dense(b)) return touches(sa.lo, ea, a_desc, sb.lo, sb.hi);
  // Otherwise test each element of the smaller view against the other.
  const bool a_small = a.numel() <= b.numel();
  const std::vector<Dim>& small = a_small ? da : db;
  const std::vector<Dim>& big_desc = a_small ? b_desc : a_desc;
  const uintptr_t small_base = a_small ? sa.lo : sb.lo, big_base = a_small ? sb.lo : sa.lo;
  const std::size_t es = a_small ? ea : eb, eo = a_small ? eb : ea;
  int64_t count = 1;
  for (const Dim& d : small) count *= d.size;
  if (count > (int64_t{1} << 22)) return true;
  std::vector<int64_t> idx(small.size(), 0);
  int64_t off = 0;
  for (int64_t k = 0; k < count; ++k) {
    const uintptr_t p = small_base + static_cast<uintptr_t>(off) * es;
    if (touches(big_base, eo, big_desc, p, p + es)) return true;
    for (std::size_t j = 0; j < small.size(); ++j) {
      if (++idx[j] < small[j].size) {
        off += small[j].stride;
        break;
      }
      off -= (small[j].size - 1) * small[j].stride;
      idx[j] = 0;
    }
  }
  return false;
}

int64_t element_offset(const TensorView& v, int64_t i) {
  int64_t off = 0;
  for (int k = v.rank() - 1; k >= 0; --k) {
    const int64_t d = v.dim(k);
    if (d <= 0) return 0;
    off += (i % d) * v.stride(k);
    i /= d;
  }
  return off;
}

namespace {
// The stride between consecutive elements in row-major index order when it is one for the whole view, else -1.
int64_t linear_step(const TensorView& v) {
  int64_t step = -1, span = 1;  // span: elements the dims to the right cover
  for (int k = v.rank() - 1; k >= 0; --k) {
    const int64_t d = v.dim(k);
    if (d == 0) return 0;
    if (d == 1) continue;
    if (step < 0) {
      step = v.stride(k);
    } else if (v.stride(k) != step * span) {
      return -1;
    }
    span *= d;
  }
  return step < 0 ? 0 : step;
}

// f(i, offset of element i) for every element, the offsets a multiply apart where they can be.
template <class F>
void for_each_offset(const TensorView& v, const F& f) {
  const int64_t n = v.numel(), step = linear_step(v);
  if (step >= 0) {
    for (int64_t i = 0; i < n; ++i) f(i, static_cast<size_t>(i * step));
  } else {
    for (int64_t i = 0; i < n; ++i) f(i, static_cast<size_t>(element_offset(v, i)));
  }
}
}  // namespace

void load_doubles(const TensorView& v, double* out) {
  if (v.dtype() == DType::kFloat32) {  // the common case without a call per element
    const float* p = static_cast<const float*>(v.data());
    for_each_offset(v, [&](int64_t i, size_t o) { out[i] = p[o]; });
  } else {
    for_each_offset(v, [&](int64_t i, size_t o) { out[i] = load_as_double(v.data(), v.dtype(), o); });
  }
}

void load_doubles_or(const TensorView& v, int64_t n, double fill, double* out) {
  if (v.is_none()) {
    std::fill(out, out + n, fill);
  } else {
    load_doubles(v, out);
  }
}

void store_doubles(const double* in, const TensorView& v) {
  if (v.dtype() == DType::kFloat32) {
    float* p = static_cast<float*>(v.data());
    for_each_offset(v, [&](int64_t i, size_t o) { p[o] = static_cast<float>(in[i]); });
  } else {
    for_each_offset(v, [&](int64_t i, size_t o) { store_from_double(v.data(), v.dtype(), o, in[i]); });
  }
}

void gather_dense(const TensorView& src, void* dst, int threads) { copy_dense<true>(src, dst, threads); }

void scatter_dense(const void* src, const TensorView& dst, int threads) {
  copy_dense<false>(dst, const_cast<void*>(src), threads);
}

int PackPlan::add(const TensorView& v, bool take_as_is, bool read, bool write) {
  if (entries_.empty()) entries_.reserve(8);  // one allocation for an operator's tensors (was one per doubling)
  Entry e;
  e.view = v;
  e.read = read;
  e.write = write;
  const int64_t n = v.numel();
  e.packed = !take_as_is && n > 0;
  if (e.packed) {
    e.offset = bytes_;
    bytes_ += (static_cast<uint64_t>(n) * dtype_size(v.dtype()) + 63) / 64 * 64;
  }
  entries_.push_back(e);
  return static_cast<int>(entries_.size()) - 1;
}

TensorView PackPlan::resolve(int id, void* workspace) const {
  const Entry& e = entries_[id];
  if (!e.packed) return e.view;
  return TensorView::contiguous(static_cast<unsigned char*>(workspace) + e.offset, e.view.dtype(), e.view.shape(),
                                e.view.rank());
}

void PackPlan::gather(void* workspace, int threads) const {
  for (const Entry& e : entries_) {
    if (e.packed && e.read) gather_dense(e.view, static_cast<unsigned char*>(workspace) + e.offset, threads);
  }
}

void PackPlan::scatter(void* workspace, int threads) const {
  for (const Entry& e : entries_) {
    if (e.packed && e.write) scatter_dense(static_cast<unsigned char*>(workspace) + e.offset, e.view, threads);
  }
}

}  // namespace nnops::detail
