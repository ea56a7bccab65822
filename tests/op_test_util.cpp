#include "tests/op_test_util.hpp"

#include <algorithm>
#include <vector>

#include "tests/test_util.hpp"

namespace nnops::testing {

ops::Problem make_problem(const ops::OpDesc& d, DType t, const std::vector<int64_t>& shape, uint64_t seed,
                          bool aux_like_t, const std::function<void(ops::Attrs&)>& edit) {
  ops::ProblemSpec s;
  s.dtype = t;
  s.shape = shape;
  s.seed = seed;
  s.aux_like_t = aux_like_t;
  s.attrs = d.attrs_for(shape);
  if (edit) edit(s.attrs);
  return d.make_problem(s);
}

Status run(const ops::OpDesc& d, const std::vector<TensorView>& v, const ops::Attrs& a, int threads) {
  return ops::run_prepared(d.name, d.prepare, v.data(), a, Context{threads});
}

Status run(const ops::OpDesc& d, ops::Problem& p, int threads) { return run(d, p.views(), p.attrs, threads); }

::testing::AssertionResult same_outputs(const ops::OpDesc& d, const ops::Problem& a, const ops::Problem& b) {
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    if (d.tensors[i].role == ops::Role::kIn || !a.present[i]) continue;
    if (!a.t[i].same_bytes(b.t[i])) return ::testing::AssertionFailure() << d.tensors[i].name << " differs";
  }
  return ::testing::AssertionSuccess();
}

double expect_matches_reference(const ops::OpDesc& d, const ops::Problem& before,
                                const std::function<Status(ops::Problem&)>& call) {
  double worst = 0;
  // Outputs that passed: a target giving the same bits has the same errors, so the float64 reference (the costly
  // part under qemu) is computed again only for bits not seen yet.
  std::vector<ops::Problem> passed;
  for_each_isa([&](const std::string&) {
    ops::Problem p = before.clone();
    const Status s = call(p);
    ASSERT_TRUE(s.is_ok()) << s.message();
    for (const ops::Problem& q : passed) {
      if (same_outputs(d, p, q)) return;
    }
    const detail::VerifyReport r = d.verify(before, p, 1);
    EXPECT_TRUE(r.pass()) << r.failures << " of " << r.checked << " outside the bound; worst err/bound "
                          << r.worst_ratio;
    worst = std::max(worst, r.worst_ratio);
    if (r.pass()) passed.push_back(std::move(p));
  });
  return worst;
}

}  // namespace nnops::testing
