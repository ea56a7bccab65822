#include "tests/test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "src/core/layout.hpp"

namespace nnops::testing {

std::vector<CpuIsa> runnable_isas() {
  std::vector<CpuIsa> out;
  // What the CPU supports and NNOPS_MAX_CPU_ISA allows: forcing a target above the cap fails.
  for (const CpuIsa& isa : compiled_isas())
    if (isa.supported && force_isa_for_testing(isa.bits).is_ok()) out.push_back(isa);
  (void)force_isa_for_testing(0);
  return out;
}

std::vector<CpuIsa> test_isas() {
  const std::vector<CpuIsa> all = runnable_isas();
  const char* env = std::getenv("NNOPS_TEST_ISAS");
  if (!env || !*env) return all;
  std::string list(env);
  for (char& c : list)
    if (c == ',') c = ' ';
  std::istringstream in(list);
  std::vector<std::string> names;
  for (std::string name; in >> name;) names.push_back(name);
  std::vector<CpuIsa> out;  // in runnable_isas() order, best first
  for (const CpuIsa& isa : all)
    if (std::find(names.begin(), names.end(), isa.name) != names.end()) out.push_back(isa);
  for (const std::string& name : names)
    if (std::none_of(all.begin(), all.end(), [&](const CpuIsa& isa) { return isa.name == name; }))
      ADD_FAILURE() << "NNOPS_TEST_ISAS names '" << name << "', which this CPU cannot run";
  return out;
}

void for_each_isa(const std::function<void(const std::string&)>& body) {
  const std::vector<CpuIsa> isas = test_isas();
  ASSERT_FALSE(isas.empty());
  for (const CpuIsa& isa : isas) {
    SCOPED_TRACE("isa=" + isa.name);
    ASSERT_TRUE(force_isa_for_testing(isa.bits).is_ok());
    ASSERT_EQ(current_isa(), isa.name);
    body(isa.name);
  }
  ASSERT_TRUE(force_isa_for_testing(0).is_ok());
}

bool quick_mode() {
  const char* env = std::getenv("NNOPS_TEST_QUICK");
  return env && *env && std::strcmp(env, "0") != 0;
}

void fill_random(HostBuffer& b, std::mt19937_64& rng, double lo_exp, double hi_exp) {
  std::uniform_real_distribution<double> u(-1.0, 1.0), e(lo_exp, hi_exp);
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, u(rng) * std::pow(10.0, std::round(e(rng))));
}

void fill_sentinel(HostBuffer& b) {
  if (b.bytes()) std::memset(b.data(), 0xA5, b.bytes());
}

std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  return s;
}

StridedCopy::StridedCopy(const HostBuffer& dense, const std::vector<int64_t>& strides) {
  const std::vector<int64_t>& shape = dense.shape();
  const int rank = static_cast<int>(shape.size());
  const TensorView probe = TensorView::strided(nullptr, dense.dtype(), shape.data(), strides.data(), rank);
  const int64_t span = dense.numel() ? detail::max_offset(probe) + 1 : 0;
  const std::size_t es = dtype_size(dense.dtype());
  storage_.assign(static_cast<std::size_t>(span) * es + 64, 0xA5);
  // Start at a 64-byte boundary: the kernels' own alignment handling is what the strides exercise.
  const uintptr_t base = reinterpret_cast<uintptr_t>(storage_.data());
  unsigned char* p = storage_.data() + (64 - base % 64) % 64;
  if (p + span * es > storage_.data() + storage_.size()) p = storage_.data();
  view_ = TensorView::strided(p, dense.dtype(), shape.data(), strides.data(), rank);
  if (dense.numel()) detail::scatter_dense(dense.data(), view_);
  sentinel_copy_ = storage_;
}

HostBuffer StridedCopy::dense_copy() const {
  HostBuffer b(view_.dtype(), std::vector<int64_t>(view_.shape(), view_.shape() + view_.rank()));
  detail::gather_dense(view_, b.data());
  return b;
}

bool StridedCopy::untouched_outside() const {
  std::vector<bool> inside(storage_.size(), false);
  const std::size_t es = dtype_size(view_.dtype());
  const std::size_t base = static_cast<const unsigned char*>(view_.data()) - storage_.data();
  for (int64_t i = 0; i < view_.numel(); ++i) {
    const std::size_t off = base + static_cast<std::size_t>(detail::element_offset(view_, i)) * es;
    for (std::size_t k = 0; k < es; ++k) inside[off + k] = true;
  }
  for (std::size_t i = 0; i < storage_.size(); ++i) {
    if (!inside[i] && storage_[i] != sentinel_copy_[i]) return false;
  }
  return true;
}

}  // namespace nnops::testing
