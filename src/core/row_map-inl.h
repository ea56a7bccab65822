// Elementwise rows and the row-major and channels-last pipelines of the GroupNorm family (per-target include, after
// hwy/highway.h, simd_convert-inl.h and canonical_sum-inl.h, inside a HWY_TARGET_INCLUDE'd file).
//
// NB: why a pipeline. A row-major group is two passes: its statistics read it from memory, then its output pass
// reads it again from L2 and writes the output. Done group by group, the core alternates a phase of loads from
// memory and a phase of stores to it, and one core of the Intel Xeon VM (docs/performance.md) loads only ~14 GB/s
// and streams stores at ~22 GB/s, but moves ~20 GB/s of both at once. PipelineGroups writes group q's output as
// the side work of group q + 1's statistics (CanonRowSums' `side`), so that the two overlap: GroupNorm float32
// [24, 320, 64, 64] 0.49 -> 0.41 ns/element on one thread, GroupNormBackward 0.79 -> 0.62. The operations on every
// element are the same as in the unpipelined order, so the results are the same bits.

#if defined(NNOPS_CORE_ROW_MAP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NNOPS_CORE_ROW_MAP_INL_H_
#undef NNOPS_CORE_ROW_MAP_INL_H_
#else
#define NNOPS_CORE_ROW_MAP_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "hwy/highway.h"
#include "src/core/canonical_sum-inl.h"
#include "src/core/simd_convert-inl.h"

// The lambdas of these pieces (and of the operations' With) are forced inline: called out of line, each side step
// of the pipeline spilled the sums' accumulators around the call (every vector register is caller-saved).
#ifndef NNOPS_LAMBDA_INLINE
#define NNOPS_LAMBDA_INLINE __attribute__((always_inline))
#endif

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {

// out[k] = f(in[k]...) over a row of n elements, in three pieces: the head up to the stream alignment (`stream`:
// non-temporal stores, for outputs larger than the caches they could stay in), whole vectors, the tail. f is an
// elementwise operation given as f.With(df, body): it sets up its constant vectors (once per piece, not per vector:
// they are locals, which sizeless SVE vectors must be) and calls body(g) with g(v...) the operation on float32 vectors
// of ScalableTag<float>. Every input is read before out is written, so out may be an input (in place).
template <typename T, class F, class... In>
HWY_INLINE size_t MapHead(T* out, size_t n, bool stream, const F& f, const In*... in) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  if (stream) {
    const size_t head = StreamHead(out, n, stream);
    for (; i < head; i += std::min(N, head - i)) {
      const size_t r = std::min(N, head - i);
      f.With(df, [&](const auto& g)
                     HWY_ATTR NNOPS_LAMBDA_INLINE { StoreF32N(df, g(LoadF32N(df, in + i, r)...), out + i, r); });
    }
  }
  return i;
}

// Elements [i, j) in whole steps of 2 Lanes(ScalableTag<float>) (two vectors; bfloat16 as even/odd pairs: f must
// then return NaNs with zero low 16 bits, see Bf16PairMap), then single vectors; returns where it stopped, short
// of j by less than a vector. Out must be aligned to kStreamAlign at i when `stream`.
template <typename T, class F, class... In>
HWY_INLINE size_t MapBody(T* out, size_t i, size_t j, bool stream, const F& f, const In*... in) {
  const hn::ScalableTag<float> df;
  return f.With(df, [&](const auto& g) HWY_ATTR NNOPS_LAMBDA_INLINE {
#if HWY_TARGET != HWY_SCALAR
    if constexpr (std::is_same_v<T, hwy::bfloat16_t>) i = Bf16PairMap(df, out, i, j, stream, g, in...);
#endif
    return F32Map(df, out, i, j, stream,
                  [&](size_t k) HWY_ATTR NNOPS_LAMBDA_INLINE { return g(LoadF32(df, in + k)...); });
  });
}

template <typename T, class F, class... In>
HWY_INLINE void MapTail(T* out, size_t i, size_t n, const F& f, const In*... in) {
  const hn::ScalableTag<float> df;
  if (i < n) {
    f.With(df, [&](const auto& g)
                   HWY_ATTR NNOPS_LAMBDA_INLINE { StoreF32N(df, g(LoadF32N(df, in + i, n - i)...), out + i, n - i); });
  }
}

template <typename T, class F, class... In>
void MapRow(T* out, size_t n, bool stream, const F& f, const In*... in) {
  size_t i = MapHead(out, n, stream, f, in...);
  i = MapBody(out, i, n, stream, f, in...);
  MapTail(out, i, n, f, in...);
}

// MapRow as the side work of another row's sums (CanonRowSums' `side`, called before each of its steps of kCanonLanes
// elements): `burst` steps of whole vectors (two each) after every `burst` steps of the sums, while the output has not
// passed them by more than kCanonLanes elements (more than a float32 streamed head, which MapHead wrote); the rest in
// Finish. NB: a burst may start up to a head past the sums. Without that slack a streamed output that does not start on
// a line (a malloc'd buffer 16 bytes past a page) skipped each row's first burst and then trailed the sums by a burst,
// and that order cost Zen 2 a third: GroupNorm float32 [2, 320, 64, 64], one thread, 893-919 us a call against 640-681
// with the output on a line, and 673-688 with the slack; [24, 320, 64, 64] 13.6 -> 10.6 ms (10.4-11.0 on a line).
template <typename T, class F, class... In>
class SideRow {
 public:
  SideRow(T* out, size_t n, bool stream, size_t burst, const F& f, const In*... in)
      : out_(out),
        n_(n),
        stream_(stream),
        burst_(LineBurst(burst)),
        f_(f),
        in_(in...),
        i_(MapHead(out, n, stream, f, in...)) {}
  HWY_INLINE void operator()(size_t sums_at) {
    const size_t step = 2 * hn::Lanes(hn::ScalableTag<float>());
    if (i_ > sums_at + kCanonLanes || (sums_at / kCanonLanes) % burst_ != 0) return;
    const size_t steps = std::min(burst_, (n_ - i_) / step);
    if (steps > 0) i_ = Body(i_ + steps * step);
  }
  HWY_INLINE void Finish() {
    Finish(std::index_sequence_for<In...>());
    i_ = n_;
  }

 private:
  // `burst` steps rounded up to whole lines of output (a step of two vectors is a line for float32 on AVX2, half of
  // one on SSE4 or for the half types): a burst that ended inside a line would leave it half streamed and half
  // written by ordinary stores (StreamEnd), which AMD Zen 2 pays an order of magnitude for.
  static size_t LineBurst(size_t burst) {
    const size_t step_bytes = 2 * hn::Lanes(hn::ScalableTag<float>()) * sizeof(T);
    const size_t per_line = step_bytes >= kStreamAlign ? 1 : kStreamAlign / step_bytes;
    return (std::max<size_t>(burst, 1) + per_line - 1) / per_line * per_line;
  }
  HWY_INLINE size_t Body(size_t j) { return Body(j, std::index_sequence_for<In...>()); }
  template <size_t... I>
  HWY_INLINE size_t Body(size_t j, std::index_sequence<I...>) {
    return MapBody(out_, i_, j, stream_, f_, std::get<I>(in_)...);
  }
  template <size_t... I>
  HWY_INLINE void Finish(std::index_sequence<I...> is) {
    MapTail(out_, Body(n_, is), n_, f_, std::get<I>(in_)...);
  }
  T* out_;
  size_t n_;
  bool stream_;
  size_t burst_;
  F f_;
  std::tuple<const In*...> in_;
  size_t i_;
};

template <typename T, class F, class... In>
SideRow<T, F, In...> MakeSideRow(T* out, size_t n, bool stream, size_t burst, const F& f, const In*... in) {
  return SideRow<T, F, In...>(out, n, stream, burst, f, in...);
}

// Columns [c, e) of a channels-last output row where whole vectors do not fit (a streamed row's head before its
// first line, the row's tail): vectors of fewer lanes through the target's masked moves where it has them
// (kTailMoves), g(k, r) giving the float32 results of the r columns from k, which it must read in full before they
// are stored (dx may be dy); elsewhere column by column, column(k) (a buffer per array would cost more than the
// arithmetic of a few columns there). Returns e. Column by column had cost each element of a half type an out-of-line
// rounding (AMD Zen 4, one thread, the bench's malloc layout, us a call, three rounds): [2, 40, 64, 64] channels-last
// (rows of 2 vectors and a tail of 8) GroupNorm float16 434-549 -> 85-134, bfloat16 456-568 -> 146-234, float32 142-196
// -> 101-132; GroupNormBackward float16 640-739 -> 141-240, bfloat16 632-740 -> 208-345.
template <typename T, class G, class Column>
HWY_INLINE size_t PartialColumns(T* out, size_t c, size_t e, const G& g, const Column& column) {
  if constexpr (kTailMoves<T> != TailMoves::kBuffer) {
    const hn::ScalableTag<float> df;
    const size_t N = hn::Lanes(df);
    for (; c < e; c += std::min(N, e - c)) {
      const size_t r = std::min(N, e - c);
      StoreF32N(df, g(c, r), out + c, r);
    }
  } else {
    for (; c < e; ++c) column(c);
  }
  return e;
}

// NB: streamed channels-last rows joined across their ends. A unit of whole rows (row stride = cols) whose rows all
// start `head` columns before a line (the output not on a line, e.g. 16 bytes into its page as malloc places it, with
// rows of whole lines) has a line at each row's end that holds the row's last L - head columns (L = a line's
// elements) and the next row's first head. Written as each row's tail and the next row's head, that line took two
// ordinary stores beside the streamed ones, and they cost more than the rest of the row: GroupNorm float16
// [8, 320, 64, 64] channels-last, one thread (AMD Zen 4), 7.2-7.9 ms a call at 16 bytes into the page against
// 2.3-2.6 on a line, and 2.6 with those stores left out. So the rows are joined: each row but the last stops at
// its last whole line, and the line after it is computed as one, from the row's columns cols - (L - head) on
// (contiguous with the next row's first columns, in the inputs as in the output), with the constants of those
// columns gathered once per unit (JoinConsts), and streamed whole; only the unit's first head and last tail take
// ordinary stores. The same operations on the same elements, so the same bits.
//
// The head every row of such a unit shares, where its rows are joined; 0 where they are not (not streamed, not
// whole rows, rows that are not whole lines, rows on a line, or vectors that do not divide a line).
template <typename T>
HWY_INLINE size_t JoinHead(const T* out_row0, size_t cols, size_t stride, bool stream) {
  constexpr size_t kL = kStreamAlign / sizeof(T);
  const size_t N = hn::Lanes(hn::ScalableTag<float>());
  if (!stream || cols != stride || cols % kL != 0 || kL % N != 0) return 0;
  return StreamHead(out_row0, cols, true);
}

// The most elements a line holds (2-byte types), the length of a joining line's constant arrays.
constexpr size_t kJoinMax = kStreamAlign / 2;

// The constants of a joining line's L columns from a per-column array k of `cols` floats (see JoinHead): the row's
// last L - head, then the first head.
template <typename T>
HWY_INLINE void JoinConsts(size_t head, size_t cols, const float* HWY_RESTRICT k, float* HWY_RESTRICT line) {
  constexpr size_t kL = kStreamAlign / sizeof(T);
  static_assert(kL <= kJoinMax, "a line of T is longer than the joining line's constant arrays");
  const size_t tail = kL - head;
  for (size_t j = 0; j < kL; ++j) line[j] = j < tail ? k[cols - tail + j] : k[j - tail];
}

// A unit's join (JoinHead: the head its rows share, or 0) and, where it joins, the joining line's constants of each
// per-column array k (`cols` floats) into line + i * kJoinMax, i its place among the arrays (JoinConsts). Before
// ColumnPairsLayout reorders the arrays.
template <typename T, class... K>
HWY_INLINE size_t JoinLayout(const T* out_row0, size_t cols, size_t stride, bool stream, float* HWY_RESTRICT line,
                             const K*... k) {
  const size_t head = JoinHead(out_row0, cols, stride, stream);
  if (head != 0) {
    size_t i = 0;
    (JoinConsts<T>(head, cols, k, line + kJoinMax * i++), ...);
  }
  return head;
}

// Rows [r0, r1) of a unit of `rows` rows of `cols` columns, joined where `head` (JoinHead) is not 0: row(r, from, to)
// writes columns [from, to) of row r, which start at its first line (from = head) but in row 0; line(r, c) the line
// from column c of row r on, into row r + 1. Not joined: row(r, 0, cols).
template <typename T, class Row, class Line>
HWY_INLINE void JoinedRows(size_t r0, size_t r1, size_t rows, size_t cols, size_t head, const Row& row,
                           const Line& line) {
  const size_t tail = head == 0 ? 0 : kStreamAlign / sizeof(T) - head;
  for (size_t r = r0; r < r1; ++r) {
    if (head == 0 || r + 1 == rows) {
      row(r, r == 0 ? 0 : head, cols);
    } else {
      row(r, r == 0 ? 0 : head, cols - tail);
      line(r, cols - tail);
    }
  }
}

// A joining line (JoinedRows), streamed: out[k] = g(k) for its L elements, a float32 vector from each k, which g must
// read before it is stored (out is not restrict: dx may be dy).
template <typename T, class G>
HWY_INLINE void StreamLine(T* out, const G& g) {
  static_assert(kStreamAlign / sizeof(T) <= kJoinMax, "a line of T is longer than the joining line's constant arrays");
  const hn::ScalableTag<float> df;
  for (size_t k = 0; k < kStreamAlign / sizeof(T); k += hn::Lanes(df)) StreamF32(df, g(k), out + k);
}

// Channels-last output rows of bfloat16 (a unit's `cols` channels of rows `stride` apart, from out_row0) run as
// Bf16PairMapAt's pairs from their stream head when every row's head is the same column: the unit's per-column
// constants are then put in Bf16PairLayout's order from that column, which this returns; else kNoPairs (other types,
// or streamed rows whose starts differ in their alignment), and the rows take the float32 vectors with the constants
// as they are. Measured (AMD Zen 2, rows of 320 channels in L2): the GroupNorm output row 0.318 -> 0.160 ns/element,
// as fast as the row-major pairs; the constants de-interleaved per vector instead were 0.300.
constexpr size_t kNoPairs = ~size_t{0};
template <typename T>
HWY_INLINE size_t ColumnPairsFrom(const T* out_row0, size_t cols, size_t stride, bool stream) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    if (!stream || stride * sizeof(T) % kStreamAlign == 0) return StreamHead(out_row0, cols, stream);
  }
#endif
  (void)out_row0, (void)cols, (void)stride, (void)stream;
  return kNoPairs;
}

// Puts a unit's per-column constant arrays (`cols` floats each) in Bf16PairLayout's order from `from`, unless kNoPairs.
template <class... K>
HWY_INLINE void ColumnPairsLayout(size_t from, size_t cols, K*... k) {
#if HWY_TARGET != HWY_SCALAR
  if (from != kNoPairs) (Bf16PairLayout(hn::ScalableTag<float>(), k, from, cols), ...);
#else
  (void)from, (void)cols, ((void)k, ...);
#endif
}

// A thread's groups [q0, q1) of a row-major kernel: for each group, st = stats(q, side_of) (its statistics pass;
// it passes side_of(c) as CanonRowSums' side for its row c, c = 0, 1, ... in order), then its output rows
// row_of(q, c, st) (SideRows, c < rows). `pipeline`: group q's row c is written beside row c of group q + 1's
// statistics (rows of one length), else group by group (also without output rows). The same work either way.
template <class Stats, class RowOf>
void PipelineGroups(int64_t q0, int64_t q1, int64_t rows, bool pipeline, const Stats& stats, const RowOf& row_of) {
  auto no_side = [](int64_t) { return NoSide(); };
  using St = decltype(stats(q0, no_side));
  const bool pipe = pipeline && rows > 0;
  St st{};
  for (int64_t q = q0; q < q1; ++q) {
    if (q == q0 || !pipe) st = stats(q, no_side);
    if (pipe && q + 1 < q1) {
      const St cur = st;
      std::optional<decltype(row_of(q, 0, cur))> row;  // (a SideRow holds a lambda: no assignment)
      int64_t next = 0;                                // the first row not yet started
      auto side_of = [&](int64_t c) -> auto& {
        if (row) row->Finish();
        row.emplace(row_of(q, c, cur));
        next = c + 1;
        return *row;
      };
      st = stats(q + 1, side_of);
      if (row) row->Finish();
      for (int64_t c = next; c < rows; ++c) row_of(q, c, cur).Finish();
    } else {
      for (int64_t c = 0; c < rows; ++c) row_of(q, c, st).Finish();
    }
  }
}

// A thread's units [u0, u1) of a channels-last kernel, `rows` rows each: for each unit, stats(u, k, side) (its
// column sums, which call side(r0, r1) before each block of rows [r0, r1) as CanonColumnSums does; the unit's
// constants go to set k, 0 or 1), then its output rows rows_of(u, k, r0, r1). `pipeline`: unit u's rows are written
// beside unit u + 1's column sums, block by block (the rows the sums have reached; units of one row count), the
// constants alternating between the two sets; else unit by unit with set 0. The same work either way.
template <class Stats, class Rows>
void PipelineChunks(int64_t u0, int64_t u1, size_t rows, bool pipeline, const Stats& stats, const Rows& rows_of) {
  if (!pipeline) {
    for (int64_t u = u0; u < u1; ++u) {
      stats(u, 0, NoSide());
      rows_of(u, 0, size_t{0}, rows);
    }
    return;
  }
  size_t done = rows;  // the rows of unit u - 1 written so far (none before the first unit)
  int k = 0;
  for (int64_t u = u0; u < u1; ++u, k ^= 1) {
    auto side = [&](size_t, size_t r1) {
      if (r1 > done) rows_of(u - 1, k ^ 1, done, r1), done = r1;
    };
    stats(u, k, side);
    if (done < rows) rows_of(u - 1, k ^ 1, done, rows);
    done = 0;
  }
  if (u1 > u0) rows_of(u1 - 1, k ^ 1, size_t{0}, rows);
}

}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#endif  // NNOPS_CORE_ROW_MAP_INL_H_
