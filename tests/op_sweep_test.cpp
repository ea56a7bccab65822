// Tests every operator of the descriptor list the same way (the operators' own test files add what is
// specific to each): results against the float64 reference on every SIMD target, dtype and small shape
// (vector tails, blocking edges); bitwise independence of the thread count; strided views (channels-last,
// transposed, padded, one argument at a time) giving exactly the bits of dense ones and writing nothing
// outside the outputs' elements; validation errors that name the argument and leave every output untouched;
// empty tensors.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/core/layout.hpp"
#include "src/ops/op_desc.hpp"
#include "tests/op_test_util.hpp"
#include "tests/test_util.hpp"

namespace nnops {
namespace {

using detail::HostBuffer;
using ops::OpDesc;
using ops::Problem;
using ops::Role;

const DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

bool has_aux(const OpDesc& d) {
  for (const ops::TensorSpec& t : d.tensors) {
    if (t.dtype == ops::DtypeRule::kTOrF32) return true;
  }
  return false;
}

using testing::make_problem;
using testing::same_outputs;

Status call(const OpDesc& d, const std::vector<TensorView>& v, const ops::Attrs& a, int threads = 0) {
  return testing::run(d, v, a, threads);
}

Status call(const OpDesc& d, Problem& p, int threads = 0) { return testing::run(d, p, threads); }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Each operator's trace names the operator, the dtype and the shape.
#define NNOPS_SWEEP_TRACE(d, t, shape) \
  SCOPED_TRACE(std::string((d).name) + " " + dtype_name(t) + " " + shape_str(shape))

TEST(OpSweep, MatchesReferenceOnEveryTargetDtypeAndShape) {
  for (const OpDesc* d : ops::all_ops()) {
    uint64_t seed = 1;
    for (DType t : kDTypes) {
      for (const std::vector<int64_t>& shape : d->test_shapes) {
        for (bool aux : {false, true}) {
          if (aux && !has_aux(*d)) continue;
          NNOPS_SWEEP_TRACE(*d, t, shape);
          const Problem before = make_problem(*d, t, shape, seed++, aux);
          testing::for_each_isa([&](const std::string&) {
            Problem after = before.clone();
            ASSERT_TRUE(call(*d, after)) << call(*d, after).message();
            const detail::VerifyReport r = d->verify(before, after, 1);
            EXPECT_TRUE(r.pass()) << r.failures << " of " << r.checked << " outside the bound; worst err/bound "
                                  << r.worst_ratio;
          });
        }
      }
    }
  }
}

TEST(OpSweep, BitwiseIndependentOfThreadCount) {
  for (const OpDesc* d : ops::all_ops()) {
    for (DType t : kDTypes) {
      // The l2 bench case is large enough for every operator's parallel plans.
      const std::vector<int64_t> shape = d->bench_cases(t)[0].shape;
      NNOPS_SWEEP_TRACE(*d, t, shape);
      const Problem before = make_problem(*d, t, shape, 7, false);
      Problem one = before.clone();
      ASSERT_TRUE(call(*d, one, 1));
      for (int threads : {2, 3, 8}) {
        Problem p = before.clone();
        ASSERT_TRUE(call(*d, p, threads));
        EXPECT_TRUE(same_outputs(*d, one, p)) << threads << " threads";
      }
    }
  }
}

// Layouts to try on a tensor of this shape: (name, strides); empty when it does not apply.
std::vector<std::pair<std::string, std::vector<int64_t>>> layouts(const std::vector<int64_t>& shape) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  const int r = static_cast<int>(shape.size());
  if (r >= 3) out.push_back({"channels-last", testing::channels_last_strides(shape)});
  if (r >= 2) {  // all dims reversed (a transpose)
    std::vector<int64_t> s(r);
    int64_t acc = 1;
    for (int i = 0; i < r; ++i) {
      s[i] = acc;
      acc *= std::max<int64_t>(shape[i], 1);
    }
    out.push_back({"transposed", s});
  }
  if (r >= 1) {  // row-major with gaps: every row padded by 3 elements, every stride then doubled
    std::vector<int64_t> s(r);
    int64_t acc = 2;
    for (int i = r - 1; i >= 0; --i) {
      s[i] = acc;
      acc = acc * std::max<int64_t>(shape[i], 1) + (i == r - 1 ? 3 : 0);
    }
    out.push_back({"padded", s});
  }
  return out;
}

// Runs the problem with some tensors strided (`which`: tensor index -> layout index, -1 dense) and compares
// the outputs with the dense run's bits; no byte outside an output's elements may change.
void expect_strided_matches(const OpDesc& d, const Problem& before, const Problem& dense_after,
                            const std::function<int(int, std::size_t)>& pick, const std::string& what) {
  SCOPED_TRACE(what);
  Problem p = before.clone();
  std::vector<TensorView> views = p.views();
  std::vector<std::unique_ptr<testing::StridedCopy>> strided(d.tensors.size());
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    if (!p.present[i]) continue;
    const auto ls = layouts(p.t[i].shape());
    const int k = pick(static_cast<int>(i), ls.size());
    if (k < 0 || static_cast<std::size_t>(k) >= ls.size()) continue;
    strided[i] = std::make_unique<testing::StridedCopy>(p.t[i], ls[k].second);
    views[i] = strided[i]->view();
  }
  ASSERT_TRUE(call(d, views, p.attrs)) << call(d, views, p.attrs).message();
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    if (d.tensors[i].role == Role::kIn || !p.present[i]) continue;
    const HostBuffer got = strided[i] ? strided[i]->dense_copy() : p.t[i].clone();
    EXPECT_TRUE(got.same_bytes(dense_after.t[i])) << d.tensors[i].name << " differs from the dense call";
    if (strided[i]) {
      EXPECT_TRUE(strided[i]->untouched_outside()) << d.tensors[i].name << " wrote outside its view";
    }
  }
}

TEST(OpSweep, StridedViewsGiveTheBitsOfDenseOnes) {
  for (const OpDesc* d : ops::all_ops()) {
    for (DType t : kDTypes) {
      for (const std::vector<int64_t>& shape : d->test_shapes) {
        NNOPS_SWEEP_TRACE(*d, t, shape);
        const Problem before = make_problem(*d, t, shape, 3, false);
        Problem dense = before.clone();
        ASSERT_TRUE(call(*d, dense));
        for (std::size_t k = 0; k < 3; ++k) {  // every tensor in layout k (where it applies)
          expect_strided_matches(
              *d, before, dense, [&](int, std::size_t) { return static_cast<int>(k); },
              "all tensors in layout " + std::to_string(k));
        }
        for (std::size_t i = 0; i < d->tensors.size(); ++i) {  // one tensor at a time, padded
          expect_strided_matches(
              *d, before, dense, [&](int j, std::size_t n) { return j == static_cast<int>(i) ? int(n) - 1 : -1; },
              std::string("only ") + d->tensors[i].name + " padded");
        }
      }
    }
  }
}

// Fills every tensor the operator writes with a sentinel; returns copies of all tensors.
std::vector<HostBuffer> snapshot(const Problem& p) {
  std::vector<HostBuffer> s;
  for (const HostBuffer& b : p.t) s.push_back(b.clone());
  return s;
}

TEST(OpSweep, ValidationErrorsNameTheArgumentAndWriteNothing) {
  for (const OpDesc* d : ops::all_ops()) {
    const DType t = DType::kFloat32;
    const std::vector<int64_t> shape = d->test_shapes.back();
    NNOPS_SWEEP_TRACE(*d, t, shape);
    Problem p = make_problem(*d, t, shape, 5, false);
    for (std::size_t i = 0; i < d->tensors.size(); ++i) {
      if (d->tensors[i].role != Role::kIn) testing::fill_sentinel(p.t[i]);
    }
    const std::vector<HostBuffer> before = snapshot(p);
    HostBuffer wrong_dtype, wrong_shape;
    auto expect_rejected = [&](std::vector<TensorView> v, const std::string& arg, const std::string& what) {
      SCOPED_TRACE(what);
      const Status s = call(*d, v, p.attrs);
      EXPECT_FALSE(s.is_ok());
      EXPECT_EQ(s.message().rfind(std::string(d->name) + ": ", 0), 0u) << s.message();
      EXPECT_NE(s.message().find(arg), std::string::npos) << s.message();
      for (std::size_t k = 0; k < p.t.size(); ++k) EXPECT_TRUE(p.t[k].same_bytes(before[k])) << d->tensors[k].name;
    };
    for (std::size_t i = 0; i < d->tensors.size(); ++i) {
      const ops::TensorSpec& spec = d->tensors[i];
      const std::string name = spec.name;
      std::vector<TensorView> v = p.views();
      if (!spec.optional && p.t[i].numel() > 0) {  // null data
        v[i] = TensorView::contiguous(nullptr, p.t[i].dtype(), p.t[i].shape().data(),
                                      static_cast<int>(p.t[i].shape().size()));
        expect_rejected(v, name, "null " + name);
        v = p.views();
      }
      if (i > 0 && spec.dtype == ops::DtypeRule::kT) {  // another dtype than T (= float32 here)
        wrong_dtype = HostBuffer(DType::kFloat16, p.t[i].shape());
        v[i] = wrong_dtype.view();
        expect_rejected(v, name + " has dtype float16", "dtype of " + name);
        v = p.views();
      }
      {  // one more element in the last dim (or a dim where there was none)
        std::vector<int64_t> s = p.t[i].shape();
        if (s.empty()) {
          s = {2};
        } else {
          s.back() += 1;
        }
        wrong_shape = HostBuffer(p.t[i].dtype(), s);
        v[i] = wrong_shape.view();
        const std::vector<TensorView> bad = v;
        // The first tensor defines the shapes: then another argument is reported.
        expect_rejected(bad, i == 0 ? "" : name, "shape of " + name);
        v = p.views();
      }
      if (p.t[i].numel() > 1 && !p.t[i].shape().empty()) {  // a negative stride
        std::vector<int64_t> st = testing::dense_strides(p.t[i].shape());
        st.back() = -st.back();
        v[i] = TensorView::strided(p.t[i].data(), p.t[i].dtype(), p.t[i].shape().data(), st.data(),
                                   static_cast<int>(st.size()));
        expect_rejected(v, name + " has strides", "negative stride of " + name);
        v = p.views();
      }
      if (spec.role != Role::kIn) {  // an output over the first input's memory (unless that is its alias)
        const int first_in = [&] {
          for (std::size_t k = 0; k < d->tensors.size(); ++k) {
            if (d->tensors[k].role == Role::kIn && !d->tensors[k].scalar && static_cast<int>(k) != spec.alias_of)
              return static_cast<int>(k);
          }
          return -1;
        }();
        if (first_in >= 0 && p.t[first_in].bytes() > 0 && p.t[i].numel() > 0) {
          v[i] = TensorView::contiguous(p.t[first_in].data(), p.t[i].dtype(), p.t[i].shape().data(),
                                        static_cast<int>(p.t[i].shape().size()));
          expect_rejected(v, "overlap", name + " over " + d->tensors[first_in].name);
          v = p.views();
        }
      }
    }
  }
}

// Empty inputs succeed. An output is either left untouched or holds what the reference says (GroupNormBackward
// writes dgamma = dbeta = 0, sums over nothing); the operators' own tests pin which.
TEST(OpSweep, EmptyTensorsSucceed) {
  for (const OpDesc* d : ops::all_ops()) {
    for (std::size_t k = 0; k < d->check_shape.size(); ++k) {
      std::vector<int64_t> shape = d->check_shape;
      shape[k] = 0;
      NNOPS_SWEEP_TRACE(*d, DType::kFloat32, shape);
      Problem p = make_problem(*d, DType::kFloat32, shape, 9, false);
      for (std::size_t i = 0; i < d->tensors.size(); ++i) {
        if (d->tensors[i].role != Role::kIn) testing::fill_sentinel(p.t[i]);
      }
      const Problem before = p.clone();
      EXPECT_TRUE(call(*d, p)) << call(*d, p).message();
      bool changed = false;
      for (std::size_t i = 0; i < p.t.size(); ++i) {
        if (d->tensors[i].role == Role::kIn) {
          EXPECT_TRUE(p.t[i].same_bytes(before.t[i])) << d->tensors[i].name;
        } else {
          changed = changed || !p.t[i].same_bytes(before.t[i]);
        }
      }
      if (changed) {
        const detail::VerifyReport r = d->verify(before, p, 1);
        EXPECT_TRUE(r.pass() && r.checked > 0) << "an output was written, and not as the reference says";
      }
    }
  }
}

}  // namespace
}  // namespace nnops
