// The canonical float64 sums (src/core/canonical_sum-inl.h) on every target: row sums and column sums equal,
// bit for bit, a plain scalar evaluation of the definition (element i into lane i mod 16, lanes in index order,
// the fixed pairwise tree), on data where any other order gives other bits.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/canonical_sum_test.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/core/canonical_sum-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {

// out[0] = canonical sum of x, out[1] = of (x - m) * y, over the n elements of the rows, with the accumulations on
// the pipes P says (the same bits for every P).
template <Pipes P = Pipes::kFma, typename T>
void Rows(const T* x, const T* y, size_t n, double m, double* out) {
  auto vf = [m](auto d, auto vx, auto vy, auto* s0, auto* s1) HWY_ATTR {
    *s0 = vx;
    *s1 = hn::Mul(hn::Sub(vx, hn::Set(d, m)), vy);
  };
  auto sf = [m](double vx, double vy, double* s0, double* s1) {
    *s0 = vx;
    *s1 = (vx - m) * vy;
  };
  CanonRowSums<2, P>(x, y, n, vf, sf, out);
}
// Rows' two statistics for the rows (x0, y0) and (x1, y1) at once (CanonRowSumsPair), and the first statistic
// alone for both (its one-statistic form) into first0 and first1.
void RowsPairF32(const float* x0, const float* y0, const float* x1, const float* y1, size_t n, double m, double* out0,
                 double* out1, double* first0, double* first1) {
  auto vf = [m](auto d, auto vx, auto vy, auto* s0, auto* s1) HWY_ATTR {
    *s0 = vx;
    *s1 = hn::Mul(hn::Sub(vx, hn::Set(d, m)), vy);
  };
  auto sf = [m](double vx, double vy, double* s0, double* s1) {
    *s0 = vx;
    *s1 = (vx - m) * vy;
  };
  CanonRowSumsPair<2>(x0, y0, x1, y1, n, vf, sf, out0, out1);
  CanonRowSumsPair<1, Pipes::kHalfOfFirst>(x0, y0, x1, y1, n, vf, sf, first0, first1);
}
// The same two statistics for every column of rows x cols arrays (row stride `stride`), with m per column.
template <Pipes P = Pipes::kFma, typename T>
void Columns(const T* x, const T* y, size_t stride, size_t rows, size_t cols, const double* m, double* acc,
             double* out0, double* out1, detail::ColumnWalk walk) {
  auto vf = [m](auto d, auto vx, auto vy, size_t c, auto* s0, auto* s1) HWY_ATTR {
    *s0 = vx;
    *s1 = hn::Mul(hn::Sub(vx, hn::LoadU(d, m + c)), vy);
  };
  auto sf = [m](double vx, double vy, size_t c, double* s0, double* s1) {
    *s0 = vx;
    *s1 = (vx - m[c]) * vy;
  };
  CanonColumnSums<2, P>(x, y, stride, rows, cols, vf, sf, acc, out0, out1, walk);
}
// `pipes`: 0, 1, 2 for Pipes::kFma, kHalfOfFirst, kHalfAndQuarter.
void RowsF32(const float* x, const float* y, size_t n, double m, double* out, int pipes) {
  if (pipes == 1) return Rows<Pipes::kHalfOfFirst>(x, y, n, m, out);
  if (pipes == 2) return Rows<Pipes::kHalfAndQuarter>(x, y, n, m, out);
  Rows(x, y, n, m, out);
}
void RowsBF16(const uint16_t* x, const uint16_t* y, size_t n, double m, double* out) {
  Rows(reinterpret_cast<const hwy::bfloat16_t*>(x), reinterpret_cast<const hwy::bfloat16_t*>(y), n, m, out);
}
void ColumnsF32(const float* x, const float* y, size_t stride, size_t rows, size_t cols, const double* m, double* acc,
                double* o0, double* o1, detail::ColumnWalk walk, int pipes) {
  if (pipes == 1) return Columns<Pipes::kHalfOfFirst>(x, y, stride, rows, cols, m, acc, o0, o1, walk);
  if (pipes == 2) return Columns<Pipes::kHalfAndQuarter>(x, y, stride, rows, cols, m, acc, o0, o1, walk);
  Columns(x, y, stride, rows, cols, m, acc, o0, o1, walk);
}
void ColumnsBF16(const uint16_t* x, const uint16_t* y, size_t stride, size_t rows, size_t cols, const double* m,
                 double* acc, double* o0, double* o1, detail::ColumnWalk walk) {
  Columns(reinterpret_cast<const hwy::bfloat16_t*>(x), reinterpret_cast<const hwy::bfloat16_t*>(y), stride, rows, cols,
          m, acc, o0, o1, walk);
}

// Terms x and x^2 with the square accumulated by a fused multiply-add (kSquareOfFirst; GroupNorm's unshifted
// statistics): the same bits as adding the exact square.
struct Squares {
  static constexpr bool kSquareOfFirst = true;
  template <class D, class V>
  HWY_INLINE void operator()(D, V vx, V, V* s0, V* s1) const {
    *s0 = vx;
    *s1 = hn::Mul(vx, vx);
  }
  template <class D, class V>
  HWY_INLINE void operator()(D d, V vx, V vy, size_t, V* s0, V* s1) const {
    (*this)(d, vx, vy, s0, s1);
  }
  void operator()(double vx, double, double* s0, double* s1) const {
    *s0 = vx;
    *s1 = vx * vx;
  }
  void operator()(double vx, double vy, size_t, double* s0, double* s1) const { (*this)(vx, vy, s0, s1); }
};
// Squares over a row (pipes as RowsF32's, 0 or 1), two rows at once, and the columns of a rows x cols array.
void SquareRowsF32(const float* x, size_t n, double* out, int pipes) {
  if (pipes == 1) return CanonRowSums<2, Pipes::kHalfOfFirst>(x, x, n, Squares(), Squares(), out);
  CanonRowSums<2>(x, x, n, Squares(), Squares(), out);
}
void SquareRowsPairF32(const float* x0, const float* x1, size_t n, double* out0, double* out1) {
  CanonRowSumsPair<2, Pipes::kHalfOfFirst>(x0, x0, x1, x1, n, Squares(), Squares(), out0, out1);
}
void SquareRowsBF16(const uint16_t* x, size_t n, double* out) {
  const auto* xb = reinterpret_cast<const hwy::bfloat16_t*>(x);
  CanonRowSums<2>(xb, xb, n, Squares(), Squares(), out);
}
void SquareColumnsF32(const float* x, size_t stride, size_t rows, size_t cols, double* acc, double* o0, double* o1) {
  CanonColumnSums<2, Pipes::kHalfOfFirst>(x, x, stride, rows, cols, Squares(), Squares(), acc, o0, o1,
                                          detail::ColumnWalk{});
}

}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>

#include <cmath>

#include "nnops/dtype.hpp"
#include "tests/test_util.hpp"

namespace nnops {
HWY_EXPORT(RowsF32);
HWY_EXPORT(RowsBF16);
HWY_EXPORT(RowsPairF32);
HWY_EXPORT(ColumnsF32);
HWY_EXPORT(ColumnsBF16);
HWY_EXPORT(SquareRowsF32);
HWY_EXPORT(SquareRowsPairF32);
HWY_EXPORT(SquareRowsBF16);
HWY_EXPORT(SquareColumnsF32);

namespace {

// The definition, written out plainly.
double definition(const std::vector<double>& terms) {
  double lanes[16] = {};
  for (std::size_t i = 0; i < terms.size(); ++i) lanes[i % 16] += terms[i];
  const double a = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  const double b =
      ((lanes[8] + lanes[9]) + (lanes[10] + lanes[11])) + ((lanes[12] + lanes[13]) + (lanes[14] + lanes[15]));
  return a + b;
}

// Values over sixteen decades, both signs: their float64 sums round.
std::vector<float> spread(std::size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1), e(-8, 8);
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(u(rng) * std::pow(10.0, e(rng)));
  return v;
}

TEST(CanonicalSum, RowsAndColumnsEqualTheDefinitionOnEveryTarget) {
  const double m = 0.37;
  int order_sensitive = 0;
  testing::for_each_isa([&](const std::string&) {
    for (std::size_t n : {0, 1, 5, 15, 16, 17, 31, 32, 33, 100, 1000, 4099}) {
      SCOPED_TRACE("n = " + std::to_string(n));
      const std::vector<float> x = spread(n, 1 + n), y = spread(n, 2 + n);
      std::vector<double> t0(n), t1(n);
      for (std::size_t i = 0; i < n; ++i) {
        t0[i] = x[i];
        t1[i] = (static_cast<double>(x[i]) - m) * static_cast<double>(y[i]);
      }
      double want[2] = {definition(t0), definition(t1)};
      // Any other order would show: a plain left-to-right sum differs for the larger n.
      double plain = 0;
      for (double v : t1) plain += v;
      order_sensitive += plain != want[1];
      double got[2];
      for (int pipes = 0; pipes < 3; ++pipes) {
        SCOPED_TRACE("pipes " + std::to_string(pipes));
        HWY_DYNAMIC_DISPATCH(RowsF32)(x.data(), y.data(), n, m, got, pipes);
        EXPECT_EQ(got[0], want[0]);
        EXPECT_EQ(got[1], want[1]);
      }
      // Two rows at once, the second (y, x): each its own sums, bit for bit.
      {
        std::vector<double> u0(n), u1(n);
        for (std::size_t i = 0; i < n; ++i) {
          u0[i] = y[i];
          u1[i] = (static_cast<double>(y[i]) - m) * static_cast<double>(x[i]);
        }
        double p0[2], p1[2], f0 = -1, f1 = -1;
        HWY_DYNAMIC_DISPATCH(RowsPairF32)(x.data(), y.data(), y.data(), x.data(), n, m, p0, p1, &f0, &f1);
        EXPECT_EQ(p0[0], want[0]);
        EXPECT_EQ(p0[1], want[1]);
        EXPECT_EQ(p1[0], definition(u0));
        EXPECT_EQ(p1[1], definition(u1));
        EXPECT_EQ(f0, want[0]);
        EXPECT_EQ(f1, definition(u0));
      }
      // The same data as column 2 of a [n, 5] array, every column its own statistic.
      const std::size_t cols = 5;
      std::vector<float> xa(n * cols), ya(n * cols);
      for (std::size_t r = 0; r < n; ++r) {
        for (std::size_t c = 0; c < cols; ++c) {
          xa[r * cols + c] = c == 2 ? x[r] : static_cast<float>(c + r);
          ya[r * cols + c] = c == 2 ? y[r] : 1.0f;
        }
      }
      const double mc[cols] = {0, 0, m, 0, 0};
      std::vector<double> acc(detail::canon_column_acc_doubles(cols)), o0(cols), o1(cols);
      // 5 columns are no whole strip, so the pipe split does not enter (WideColumns below covers it).
      HWY_DYNAMIC_DISPATCH(ColumnsF32)
      (xa.data(), ya.data(), cols, n, cols, mc, acc.data(), o0.data(), o1.data(), detail::ColumnWalk{}, 0);
      EXPECT_EQ(o0[2], want[0]);
      EXPECT_EQ(o1[2], want[1]);
      // bfloat16 storage, rows and columns.
      std::vector<uint16_t> xb(n), yb(n), xab(n * cols), yab(n * cols);
      for (std::size_t i = 0; i < n; ++i) {
        xb[i] = float_to_bf16_bits(x[i]);
        yb[i] = float_to_bf16_bits(y[i]);
        t0[i] = bf16_bits_to_float(xb[i]);
        t1[i] = (t0[i] - m) * static_cast<double>(bf16_bits_to_float(yb[i]));
      }
      for (std::size_t i = 0; i < n * cols; ++i) {
        xab[i] = float_to_bf16_bits(xa[i]);
        yab[i] = float_to_bf16_bits(ya[i]);
      }
      HWY_DYNAMIC_DISPATCH(RowsBF16)(xb.data(), yb.data(), n, m, got);
      EXPECT_EQ(got[0], definition(t0));
      EXPECT_EQ(got[1], definition(t1));
      HWY_DYNAMIC_DISPATCH(ColumnsBF16)
      (xab.data(), yab.data(), cols, n, cols, mc, acc.data(), o0.data(), o1.data(), detail::ColumnWalk{});
      EXPECT_EQ(o0[2], definition(t0));
      EXPECT_EQ(o1[2], definition(t1));
    }
  });
  EXPECT_GT(order_sensitive, 0);  // the data can tell orders apart
}

// Wide arrays, which the 5 columns above do not reach: the column walk's blocks of rows (many, the last one short),
// its strips of 4 vectors of columns, the vector columns after the last whole strip and the scalar ones after
// those, with garbage in acc, a row stride wider than the columns, x and y one array or two, and every walk order and
// prefetch choice; and the same columns over at most one block of rows (64 or fewer: each column vector's lanes and
// their tree in registers, CanonColumnSumsShort), 65 (a block and one row), 77 (a last block of 13 lanes). 203 columns
// are 6 strips of 32 + one vector of 8 + 3 on AVX-512 (12 strips of 16 + 2 vectors of 4 + 3 on AVX2). 256 columns have
// their lanes padded by a line (detail::canon_column_lane_stride): 8 strips of 32 (16 of 16).
void WideColumnsEqualTheDefinition(std::size_t cols, std::size_t stride) {
  const std::size_t max_rows = 1000;
  const std::vector<float> x = spread(max_rows * stride, 11), y = spread(max_rows * stride, 12);
  std::vector<double> m(cols);
  for (std::size_t c = 0; c < cols; ++c) m[c] = 0.01 * static_cast<double>(c);
  std::vector<uint16_t> xb(x.size()), yb(y.size());
  for (std::size_t i = 0; i < x.size(); ++i) xb[i] = float_to_bf16_bits(x[i]), yb[i] = float_to_bf16_bits(y[i]);
  for (std::size_t rows : {max_rows, std::size_t{77}, std::size_t{65}, std::size_t{64}, std::size_t{49},
                           std::size_t{17}, std::size_t{16}, std::size_t{5}, std::size_t{1}}) {
    SCOPED_TRACE("rows = " + std::to_string(rows));
    // want[bf16][same][c]: the two statistics of column c, from float32 or bfloat16 data, y = x or not.
    std::vector<double> want[2][2][2];
    for (int b = 0; b < 2; ++b) {
      for (int same = 0; same < 2; ++same) {
        want[b][same][0].resize(cols), want[b][same][1].resize(cols);
        for (std::size_t c = 0; c < cols; ++c) {
          std::vector<double> t0(rows), t1(rows);
          for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t i = r * stride + c;
            const double vx = b ? bf16_bits_to_float(xb[i]) : x[i];
            const double vy = same ? vx : (b ? bf16_bits_to_float(yb[i]) : y[i]);
            t0[r] = vx;
            t1[r] = (vx - m[c]) * vy;
          }
          want[b][same][0][c] = definition(t0);
          want[b][same][1][c] = definition(t1);
        }
      }
    }
    testing::for_each_isa([&](const std::string&) {
      for (int k = 0; k < 24; ++k) {
        const int b = k & 1, same = k >> 1 & 1;
        // Strip by strip or lane by lane; the next block not prefetched, prefetched into L2 or into L1 (the bits
        // depend on neither); every pair of these with every dtype and y = x or not.
        detail::ColumnWalk walk;
        walk.by_lane = k >= 12;
        walk.prefetch = static_cast<detail::ColumnPrefetch>(k % 12 >> 2);
        // float32 (even k) runs the pipe splits (ColumnsF32's `pipes`) 0, 2, 1 in turn.
        SCOPED_TRACE(std::string(b ? "bfloat16" : "float32") + (same ? ", y = x" : ", y != x") +
                     (walk.by_lane ? ", lane by lane" : ", strip by strip") + ", prefetch " +
                     std::to_string(k % 12 >> 2) + (b ? "" : ", pipes " + std::to_string(k % 3)));
        std::vector<double> acc(detail::canon_column_acc_doubles(cols), -7.5), o0(cols), o1(cols);
        if (b) {
          HWY_DYNAMIC_DISPATCH(ColumnsBF16)
          (xb.data(), same ? xb.data() : yb.data(), stride, rows, cols, m.data(), acc.data(), o0.data(), o1.data(),
           walk);
        } else {
          HWY_DYNAMIC_DISPATCH(ColumnsF32)
          (x.data(), same ? x.data() : y.data(), stride, rows, cols, m.data(), acc.data(), o0.data(), o1.data(), walk,
           k % 3);
        }
        int wrong = 0;
        for (std::size_t c = 0; c < cols; ++c) {
          wrong += o0[c] != want[b][same][0][c];
          wrong += o1[c] != want[b][same][1][c];
        }
        EXPECT_EQ(wrong, 0);
      }
    });
  }
}
// A second statistic that squares the first term's exact value takes one fused multiply-add per vector where the
// target has FMA (AccSecond): every form gives the definition's bits of x and x^2 on every target, FMA or not.
TEST(CanonicalSum, FusedSquaresEqualTheDefinitionOnEveryTarget) {
  const std::size_t cols = 203, stride = 211;
  const std::vector<float> x = spread(1000 * stride, 31);
  std::vector<uint16_t> xb(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xb[i] = float_to_bf16_bits(x[i]);
  auto want = [](auto at, std::size_t n) {
    std::vector<double> t0(n), t1(n);
    for (std::size_t i = 0; i < n; ++i) t0[i] = at(i), t1[i] = t0[i] * t0[i];
    return std::pair<double, double>{definition(t0), definition(t1)};
  };
  int order_sensitive = 0;
  testing::for_each_isa([&](const std::string&) {
    for (std::size_t n : {1, 15, 16, 33, 1000, 4099}) {
      SCOPED_TRACE("n = " + std::to_string(n));
      const auto w = want([&](std::size_t i) { return static_cast<double>(x[i]); }, n);
      double plain = 0;
      for (std::size_t i = 0; i < n; ++i) plain += static_cast<double>(x[i]) * x[i];
      order_sensitive += plain != w.second;
      double got[2], other[2];
      for (int pipes = 0; pipes < 2; ++pipes) {
        HWY_DYNAMIC_DISPATCH(SquareRowsF32)(x.data(), n, got, pipes);
        EXPECT_EQ(got[0], w.first);
        EXPECT_EQ(got[1], w.second);
      }
      HWY_DYNAMIC_DISPATCH(SquareRowsPairF32)(x.data(), x.data() + 5000, n, got, other);
      const auto w1 = want([&](std::size_t i) { return static_cast<double>(x[5000 + i]); }, n);
      EXPECT_EQ(got[0], w.first);
      EXPECT_EQ(got[1], w.second);
      EXPECT_EQ(other[0], w1.first);
      EXPECT_EQ(other[1], w1.second);
      HWY_DYNAMIC_DISPATCH(SquareRowsBF16)(xb.data(), n, got);
      const auto wb = want([&](std::size_t i) { return static_cast<double>(bf16_bits_to_float(xb[i])); }, n);
      EXPECT_EQ(got[0], wb.first);
      EXPECT_EQ(got[1], wb.second);
    }
    for (std::size_t rows : {1000, 77, 64, 5}) {  // blocks of rows, and one short block in registers
      SCOPED_TRACE("rows = " + std::to_string(rows));
      std::vector<double> acc(detail::canon_column_acc_doubles(cols), -7.5), o0(cols), o1(cols);
      HWY_DYNAMIC_DISPATCH(SquareColumnsF32)(x.data(), stride, rows, cols, acc.data(), o0.data(), o1.data());
      int wrong = 0;
      for (std::size_t c = 0; c < cols; ++c) {
        const auto wc = want([&](std::size_t r) { return static_cast<double>(x[r * stride + c]); }, rows);
        wrong += o0[c] != wc.first;
        wrong += o1[c] != wc.second;
      }
      EXPECT_EQ(wrong, 0);
    }
  });
  EXPECT_GT(order_sensitive, 0);  // the data can tell orders apart
}

TEST(CanonicalSum, WideColumnsEqualTheDefinitionOnEveryTarget) {
  WideColumnsEqualTheDefinition(203, 211);
  WideColumnsEqualTheDefinition(256, 256);
}

}  // namespace
}  // namespace nnops
#endif  // HWY_ONCE
