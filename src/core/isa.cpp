// Target selection for Highway's dynamic dispatch.
#include "nnops/isa.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/core/isa.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {
// The target the dispatcher picks now, as seen by a dispatched call itself.
int64_t DispatchedTarget() { return HWY_TARGET; }
}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nnops {
HWY_EXPORT(DispatchedTarget);

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// hwy::SupportedTargets(), leaving the dispatch choice as the first dynamic dispatch would make it. NB:
// outside its test mode, Highway 1.0.3's SupportedTargets() resets the choice from the targets it detected
// before adding those that need one SVE vector length (SVE2_128, SVE_256), which it then returns; left so,
// kernels called afterwards run sve2 on a 128-bit SVE2 or a 256-bit SVE CPU. Choosing again from what it
// returned is what its own dispatch does.
int64_t supported_targets() {
  const int64_t supported = hwy::SupportedTargets();
  hwy::GetChosenTarget().Update(supported);
  return supported;
}

std::vector<int64_t> compiled_bits() {
  std::vector<int64_t> out;
  for (int64_t t = HWY_TARGETS; t != 0; t &= t - 1) out.push_back(t & -t);  // lowest bit = best
  return out;
}

Status apply_cap(const std::string& name) {
  const std::string want = lower(name);
  if (want.empty() || want == "native" || want == "best") {
    hwy::DisableTargets(0);
    return Status::ok();
  }
  int64_t disable = 0;
  for (int64_t bit : compiled_bits()) {
    if (lower(hwy::TargetName(bit)) == want) {
      hwy::DisableTargets(disable);
      return Status::ok();
    }
    disable |= bit;  // every target before this one is better: disable it
  }
  std::string known;
  for (int64_t bit : compiled_bits()) known += (known.empty() ? "" : ", ") + lower(hwy::TargetName(bit));
  return Status(StatusCode::kInvalidArgument,
                "set_max_isa: unknown ISA '" + name + "'; expected one of: native, " + known);
}

}  // namespace

namespace detail {
// Applies NNOPS_MAX_CPU_ISA once, before the first kernel runs. A bad value is ignored here (it cannot
// be reported from a kernel); `nnops info` reports it.
void init_dispatch() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* env = std::getenv("NNOPS_MAX_CPU_ISA")) (void)apply_cap(env);
  });
}

namespace {
bool is_intel() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  return __builtin_cpu_is("intel") != 0;
#else
  return false;
#endif
}

// On Intel CPUs unless the environment variable `env` says 0 or 1.
bool intel_unless(const char* env) {
  if (const char* v = std::getenv(env)) return std::strcmp(v, "0") != 0;
  return is_intel();
}
}  // namespace

bool software_prefetch() {
  static const bool on = intel_unless("NNOPS_SOFTWARE_PREFETCH");
  return on;
}

bool overlap_passes() {
  static const bool on = intel_unless("NNOPS_OVERLAP_PASSES");
  return on;
}

uint64_t stream_output_min_bytes(int threads) {
  static const char* env = std::getenv("NNOPS_STREAM_MIN_BYTES");
  if (env) return std::strtoull(env, nullptr, 10);
  static const uint64_t l2 = [] {  // per core; glibc reads it from CPUID (0 or -1 where unknown)
    long b = 0;
#ifdef _SC_LEVEL2_CACHE_SIZE
    b = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return static_cast<uint64_t>(b > 0 ? b : 1 << 20);
  }();
  static const bool intel = is_intel();
  return intel ? l2 * static_cast<uint64_t>(std::max(threads, 1)) : uint64_t{64} << 20;
}
}  // namespace detail

std::vector<CpuIsa> compiled_isas() {
  const int64_t supported = supported_targets();
  std::vector<CpuIsa> out;
  for (int64_t bit : compiled_bits()) out.push_back({lower(hwy::TargetName(bit)), bit, (supported & bit) != 0});
  return out;
}

std::string current_isa() {
  detail::init_dispatch();
  return lower(hwy::TargetName(HWY_DYNAMIC_DISPATCH(DispatchedTarget)()));
}

Status set_max_isa(const std::string& name) {
  detail::init_dispatch();
  return apply_cap(name);
}

Status force_isa_for_testing(long long bits) {
  detail::init_dispatch();
  hwy::SetSupportedTargetsForTest(0);  // back to what the CPU really supports (and the cap)
  if (bits == 0) return Status::ok();
  if ((bits & HWY_TARGETS) == 0 || (bits & (bits - 1)) != 0)
    return Status(StatusCode::kInvalidArgument, "force_isa_for_testing: not a single compiled target");
  if ((bits & supported_targets()) == 0)
    return Status(StatusCode::kUnsupported,
                  std::string("force_isa_for_testing: this CPU cannot run ") + hwy::TargetName(bits));
  hwy::SetSupportedTargetsForTest(bits);
  return Status::ok();
}

}  // namespace nnops
#endif  // HWY_ONCE
