#include "tests/test_util.hpp"

#include <cmath>
#include <cstring>

namespace nnops::testing {

std::vector<CpuIsa> runnable_isas() {
  std::vector<CpuIsa> out;
  for (const CpuIsa& isa : compiled_isas())
    if (isa.supported) out.push_back(isa);
  return out;
}

void for_each_isa(const std::function<void(const std::string&)>& body) {
  const std::vector<CpuIsa> isas = runnable_isas();
  ASSERT_FALSE(isas.empty());
  for (const CpuIsa& isa : isas) {
    SCOPED_TRACE("isa=" + isa.name);
    ASSERT_TRUE(force_isa_for_testing(isa.bits).is_ok());
    ASSERT_EQ(current_isa(), isa.name);
    body(isa.name);
  }
  ASSERT_TRUE(force_isa_for_testing(0).is_ok());
}

void fill_random(HostBuffer& b, std::mt19937_64& rng, double lo_exp, double hi_exp) {
  std::uniform_real_distribution<double> u(-1.0, 1.0), e(lo_exp, hi_exp);
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, u(rng) * std::pow(10.0, std::round(e(rng))));
}

void fill_sentinel(HostBuffer& b) {
  if (b.bytes()) std::memset(b.data(), 0xA5, b.bytes());
}

}  // namespace nnops::testing
