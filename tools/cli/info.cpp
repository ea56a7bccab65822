// `nnops info`: what the program sees of the machine and the build.
#include "tools/cli/info.hpp"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "nnops/nnops.hpp"
#include "src/core/check.hpp"

namespace nnops::cli {
int run_info() {
  std::printf("nnops %s\n", version());
#ifdef NNOPS_BUILD_TYPE
  std::printf("build type:     %s\n", NNOPS_BUILD_TYPE);
#endif
  std::printf("SIMD targets:   ");
  for (const CpuIsa& isa : compiled_isas())
    std::printf("%s%s ", isa.name.c_str(), isa.supported ? "" : "(unsupported)");
  std::printf("\nselected:       %s\n", current_isa().c_str());
  if (const char* cap = std::getenv("NNOPS_MAX_CPU_ISA")) {
    Status s = set_max_isa(cap);
    std::printf("NNOPS_MAX_CPU_ISA=%s%s%s\n", cap, s ? "" : "  (ignored: ", s ? "" : (s.message() + ")").c_str());
  }
  std::printf("threads:        %d (NNOPS_NUM_THREADS, else OpenMP default)\n", resolve_num_threads(Context{}));
  // Online cores are the machine's; a container or taskset may let this process use fewer (the affinity
  // mask), and that is the count OpenMP's default follows.
  cpu_set_t mask;
  const int usable = sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : -1;
  std::printf("cores online:   %ld", sysconf(_SC_NPROCESSORS_ONLN));
  if (usable > 0) std::printf(" (%d usable by this process)", usable);
  std::printf("\n");
  // The CPU-dependent choices of the kernels (none changes a bit of a result; docs/performance.md).
  std::printf("cpu kind:       %s (the choices below follow it; NNOPS_CPU_KIND)\n",
              detail::cpu_kind_name(detail::cpu_kind()));
  if (const char* kind = std::getenv("NNOPS_CPU_KIND")) {
    if (std::strcmp(kind, detail::cpu_kind_name(detail::cpu_kind())) != 0)
      std::printf("NNOPS_CPU_KIND=%s  (ignored: expected intel, amd-zen2, amd-zen4, amd-zen5 or other)\n", kind);
  }
  std::printf("prefetch:      ");
  for (const detail::PrefetchLoop loop : detail::kPrefetchLoops) {
    std::printf(" %s %s%s", detail::prefetch_loop_name(loop), detail::software_prefetch(loop) ? "on" : "off",
                loop == detail::kPrefetchLoops[std::size(detail::kPrefetchLoops) - 1] ? "" : ",");
  }
  std::printf(" (NNOPS_SOFTWARE_PREFETCH)\n");
  const detail::ColumnWalk cw = detail::column_walk();
  std::printf("column sums:    %s, the next block %s (NNOPS_COLUMN_WALK_BY_LANE, NNOPS_COLUMN_PREFETCH_L1)\n",
              cw.by_lane ? "lane by lane" : "strip by strip",
              cw.prefetch == detail::ColumnPrefetch::kOff  ? "not prefetched"
              : cw.prefetch == detail::ColumnPrefetch::kL1 ? "prefetched into L1"
                                                           : "prefetched into L2");
  std::printf(
      "sum pipes:      GroupNormBackward's row-major float32 sums split between add and FMA pipes: %s "
      "(NNOPS_SPLIT_SUM_PIPES)\n",
      detail::split_sum_pipes() ? "on" : "off");
  std::printf("float32 on avx2: %s (NNOPS_FLOAT32_AVX2: float32 kernels on AVX2 where AVX-512 also runs)\n",
              detail::float32_on_avx2() ? "on" : "off");
  const uint64_t overlap = detail::overlap_passes_max_bytes();
  const int burst = detail::overlap_burst_steps();
  const std::string bursts = burst > 1 ? ", the output in bursts of " + std::to_string(burst) + " steps" : "";
  if (overlap == 0 && detail::overlap_prefetched_passes(1))
    std::printf("overlap passes: row-major, with the prefetch%s (NNOPS_OVERLAP_PASSES)\n", bursts.c_str());
  else if (overlap == 0 || overlap == ~uint64_t{0})
    std::printf("overlap passes: %s%s (NNOPS_OVERLAP_PASSES)\n", overlap == 0 ? "off" : "on",
                overlap ? bursts.c_str() : "");
  else
    std::printf("overlap passes: on while the inputs fit %.1f MiB%s (NNOPS_OVERLAP_PASSES)\n",
                static_cast<double>(overlap) / (1 << 20),
                detail::overlap_prefetched_passes(overlap + 1) ? ", beyond with the row-major prefetch" : "");
  std::printf(
      "overlap sums:   GroupNormalizationGrad's dx beside the next group's block sums: %s (NNOPS_OVERLAP_PASSES)\n",
      detail::overlap_block_sums() ? "on" : "off");
  const int threads = resolve_num_threads(Context{});
  std::printf("stream outputs: from %.1f MiB on 1 thread, %.1f MiB on %d (NNOPS_STREAM_MIN_BYTES)\n",
              static_cast<double>(detail::stream_output_min_bytes(1)) / (1 << 20),
              static_cast<double>(detail::stream_output_min_bytes(threads)) / (1 << 20), threads);
  for (const detail::CacheInfo& c : detail::cpu0_caches()) {
    std::printf("L%d cache:       %s (shared by cpus %s)\n", c.level, c.size.c_str(), c.shared_cpus.c_str());
  }
  return 0;
}

}  // namespace nnops::cli
