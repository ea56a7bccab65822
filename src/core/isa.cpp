// Target selection for Highway's dynamic dispatch.
#include "nnops/isa.hpp"

#include <unistd.h>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#endif

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "src/core/check.hpp"

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
std::atomic<bool> g_isa_forced{false};

bool isa_forced() { return g_isa_forced.load(std::memory_order_relaxed); }

// Applies NNOPS_MAX_CPU_ISA once, before the first kernel runs. A bad value is ignored here (it cannot
// be reported from a kernel); `nnops info` reports it.
void init_dispatch() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* env = std::getenv("NNOPS_MAX_CPU_ISA")) (void)apply_cap(env);
  });
}

namespace {
CpuKind detect_cpu_kind() {
  if (const char* env = std::getenv("NNOPS_CPU_KIND")) {
    for (CpuKind k : {CpuKind::kIntel, CpuKind::kAmdZen2, CpuKind::kAmdZen4, CpuKind::kAmdZen5, CpuKind::kOther}) {
      if (std::strcmp(env, cpu_kind_name(k)) == 0) return k;
    }
    // An unknown name is ignored (it cannot be reported from a kernel); `nnops info` reports it.
  }
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  if (__builtin_cpu_is("intel")) return CpuKind::kIntel;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__builtin_cpu_is("amd") && __get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    const unsigned base = (eax >> 8) & 0xF, family = base == 0xF ? base + ((eax >> 20) & 0xFF) : base;
    const unsigned model = ((eax >> 4) & 0xF) | (base == 0xF ? ((eax >> 16) & 0xF) << 4 : 0);
    if (family >= 0x1A) return CpuKind::kAmdZen5;
    if (family == 0x17) return CpuKind::kAmdZen2;
    // Family 0x19 holds Zen 3 and Zen 4; Zen 4's models (AMD's revision guides: Genoa and Bergamo 0x10-0x1F and
    // 0xA0-0xAF, the client parts 0x60-0x7F) have the 1 MiB L2 and the AVX-512 the choices below were measured with.
    // Only with AVX-512 usable: an earlier Zen 4 VM hid it, and nothing here was measured on such a one.
    if (family == 0x19 &&
        ((model >= 0x10 && model <= 0x1F) || (model >= 0x60 && model <= 0x7F) || (model >= 0xA0 && model <= 0xAF)) &&
        __builtin_cpu_supports("avx512f"))
      return CpuKind::kAmdZen4;
  }
#endif
  return CpuKind::kOther;
}

// What the environment variable `env` says, off for 0 and on for anything else; nothing where it is unset.
std::optional<bool> env_switch(const char* env) {
  if (const char* v = std::getenv(env)) return std::strcmp(v, "0") != 0;
  return std::nullopt;
}

// The size of cpu0's level-`level` data or unified cache: Linux's sysfs first (the kernel's view, which on the VMs
// measured here was right where glibc's sysconf reported a 384 or 480 MiB L3), then sysconf, then `fallback`.
uint64_t cache_bytes(int level, uint64_t fallback) {
  for (const CacheInfo& c : cpu0_caches()) {
    if (c.level == level && c.bytes > 0) return c.bytes;
  }
  long b = 0;
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
  b = sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
#endif
  return b > 0 ? static_cast<uint64_t>(b) : fallback;
}
}  // namespace

uint64_t l3_cache_bytes() {
  static const uint64_t b = cache_bytes(3, uint64_t{32} << 20);
  return b;
}

std::vector<CacheInfo> cpu0_caches() {
  std::vector<CacheInfo> out;
  for (int i = 0; i < 16; ++i) {
    const std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lv(base + "level"), ty(base + "type"), sz(base + "size"), sh(base + "shared_cpu_list");
    CacheInfo c;
    std::string type;
    if (!(lv >> c.level)) break;
    if (!(ty >> type) || type == "Instruction") continue;
    sz >> c.size;
    sh >> c.shared_cpus;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(c.size.c_str(), &end, 10);
    const uint64_t unit = *end == 'K' ? 1 << 10 : *end == 'M' ? 1 << 20 : *end == 'G' ? 1 << 30 : 1;
    c.bytes = static_cast<uint64_t>(v) * unit;
    out.push_back(c);
  }
  return out;
}

uint64_t l2_cache_bytes() {
  static const uint64_t b = cache_bytes(2, uint64_t{1} << 20);
  return b;
}

CpuKind cpu_kind() {
  static const CpuKind kind = detect_cpu_kind();
  return kind;
}

const char* cpu_kind_name(CpuKind kind) {
  switch (kind) {
    case CpuKind::kIntel:
      return "intel";
    case CpuKind::kAmdZen2:
      return "amd-zen2";
    case CpuKind::kAmdZen4:
      return "amd-zen4";
    case CpuKind::kAmdZen5:
      return "amd-zen5";
    default:
      return "other";
  }
}

const char* prefetch_loop_name(PrefetchLoop loop) {
  switch (loop) {
    case PrefetchLoop::kElementwise:
      return "elementwise";
    case PrefetchLoop::kGroupStatistics:
      return "group statistics";
    case PrefetchLoop::kBlockSums:
      return "block sums";
    case PrefetchLoop::kColumnBlocks:
      return "column blocks";
  }
  return "?";
}

namespace {
bool column_walk_by_lane() {
  static const bool on = env_switch("NNOPS_COLUMN_WALK_BY_LANE").value_or(cpu_kind() == CpuKind::kAmdZen2);
  return on;
}
}  // namespace

bool software_prefetch(PrefetchLoop loop) {
  static const std::optional<bool> env = env_switch("NNOPS_SOFTWARE_PREFETCH");
  if (env) return *env;
  // The strip-by-strip column walk needs it wherever it runs (it hides its order from the hardware prefetchers).
  if (loop == PrefetchLoop::kColumnBlocks) return !(cpu_kind() == CpuKind::kAmdZen2 && column_walk_by_lane());
  switch (cpu_kind()) {
    case CpuKind::kIntel:
      return true;
    case CpuKind::kAmdZen2:
      return loop != PrefetchLoop::kBlockSums;
    default:
      return false;
  }
}

ColumnWalk column_walk() {
  static const bool l1 = env_switch("NNOPS_COLUMN_PREFETCH_L1").value_or(cpu_kind() == CpuKind::kAmdZen5);
  ColumnWalk w;
  w.by_lane = column_walk_by_lane();
  w.prefetch = !software_prefetch(PrefetchLoop::kColumnBlocks) ? ColumnPrefetch::kOff
               : l1                                            ? ColumnPrefetch::kL1
                                                               : ColumnPrefetch::kL2;
  return w;
}

bool float32_on_avx2() {
  static const bool on = env_switch("NNOPS_FLOAT32_AVX2").value_or(cpu_kind() == CpuKind::kAmdZen4);
  return on;
}

bool split_sum_pipes() {
  static const bool on = env_switch("NNOPS_SPLIT_SUM_PIPES").value_or(cpu_kind() == CpuKind::kAmdZen2);
  return on;
}

uint64_t overlap_passes_max_bytes() {
  constexpr uint64_t kAny = ~uint64_t{0};
  static const std::optional<bool> env = env_switch("NNOPS_OVERLAP_PASSES");
  if (env) return *env ? kAny : 0;
  switch (cpu_kind()) {
    case CpuKind::kIntel:
      return kAny;
    case CpuKind::kAmdZen4:
    case CpuKind::kAmdZen5:
      return l3_cache_bytes() / 2;
    default:
      return 0;
  }
}

bool overlap_passes(uint64_t input_bytes) {
  const uint64_t max = overlap_passes_max_bytes();
  return max != 0 && input_bytes <= max;
}

bool overlap_prefetched_passes(uint64_t input_bytes) {
  static const bool env_set = env_switch("NNOPS_OVERLAP_PASSES").has_value();
  if (env_set) return false;
  switch (cpu_kind()) {
    case CpuKind::kAmdZen2:
      return true;
    case CpuKind::kAmdZen5:
      return input_bytes > overlap_passes_max_bytes();
    default:
      return false;
  }
}

int overlap_burst_steps() {
  static const int steps = [] {
    if (const char* env = std::getenv("NNOPS_OVERLAP_BURST_STEPS")) return std::max(1, std::atoi(env));
    return cpu_kind() == CpuKind::kAmdZen2 || cpu_kind() == CpuKind::kAmdZen4 ? 16 : 1;
  }();
  return steps;
}

bool overlap_block_sums() {
  static const std::optional<bool> env = env_switch("NNOPS_OVERLAP_PASSES");
  if (env) return *env;
  return cpu_kind() == CpuKind::kAmdZen2;
}

uint64_t stream_output_min_bytes(int threads) {
  static const char* env = std::getenv("NNOPS_STREAM_MIN_BYTES");
  if (env) return std::strtoull(env, nullptr, 10);
  const uint64_t l2 = l2_cache_bytes(), l3 = l3_cache_bytes();
  const uint64_t writers = static_cast<uint64_t>(std::max(threads, 1));
  switch (cpu_kind()) {
    case CpuKind::kIntel:
    case CpuKind::kAmdZen2:
    case CpuKind::kAmdZen4:
      return l2 * writers;
    case CpuKind::kAmdZen5:
      return writers == 1 ? l2 : l3 / 2;
    default:
      return uint64_t{64} << 20;
  }
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
  detail::g_isa_forced.store(false);
  if (bits == 0) return Status::ok();
  if ((bits & HWY_TARGETS) == 0 || (bits & (bits - 1)) != 0)
    return Status(StatusCode::kInvalidArgument, "force_isa_for_testing: not a single compiled target");
  if ((bits & supported_targets()) == 0)
    return Status(StatusCode::kUnsupported,
                  std::string("force_isa_for_testing: this CPU cannot run ") + hwy::TargetName(bits));
  hwy::SetSupportedTargetsForTest(bits);
  detail::g_isa_forced.store(true);
  return Status::ok();
}

}  // namespace nnops
#endif  // HWY_ONCE
