#include "tests/test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace nnops::testing {

std::vector<CpuIsa> runnable_isas() {
  std::vector<CpuIsa> out;
  for (const CpuIsa& isa : compiled_isas())
    if (isa.supported) out.push_back(isa);
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

}  // namespace nnops::testing
