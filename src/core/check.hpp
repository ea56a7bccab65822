// Argument validation helpers shared by every operator's *_check.cpp. Each returns a Status whose
// message starts with the operator name and names the argument, e.g.
//   "group_normalization_grad: mean has shape [2, 3]; expected [N, G] = [2, 4]".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"

namespace nnops::detail {

void init_dispatch();

/// The CPUs whose kernels' memory choices (below) were measured to differ from the default: Intel (the Xeon VM of
/// docs/performance.md), AMD Zen 2 (family 0x17, which also holds Zen and Zen+ with the same 512 KiB L2 and victim
/// L3; an EPYC Rome VM, "Zen 2" section there), AMD Zen 4 with AVX-512 (family 0x19, Zen 4's models; an EPYC VM,
/// "AMD Zen 4 with AVX-512" there; a Zen 4 whose hypervisor hides AVX-512, as an earlier VM did, was not measured with
/// these choices and keeps the defaults) and AMD Zen 5 and later (family 0x1A+; an EPYC VM, "Zen 5" sections there).
/// Everything else (Zen 3, other vendors, ARM) keeps the defaults. NNOPS_CPU_KIND=intel, amd-zen2, amd-zen4,
/// amd-zen5 or other takes that kind's choices on any CPU (for measuring).
enum class CpuKind { kIntel, kAmdZen2, kAmdZen4, kAmdZen5, kOther };
CpuKind cpu_kind();
const char* cpu_kind_name(CpuKind kind);

/// The loops that may issue software prefetches ahead of the arrays they stream (software_prefetch's argument):
/// PowerSign's one pass over its three arrays; the statistics passes of GroupNorm and GroupNormBackward in row-major
/// layout and their channels-last output passes over whole rows; GroupNormalizationGrad's block sums over x, dy and
/// gamma; the channels-last column sums of GroupNorm and GroupNormBackward (the next block of rows, see
/// column_walk).
enum class PrefetchLoop { kElementwise, kGroupStatistics, kBlockSums, kColumnBlocks };
inline constexpr PrefetchLoop kPrefetchLoops[] = {PrefetchLoop::kElementwise, PrefetchLoop::kGroupStatistics,
                                                  PrefetchLoop::kBlockSums, PrefetchLoop::kColumnBlocks};
const char* prefetch_loop_name(PrefetchLoop loop);

/// Whether the loops of kind `loop` issue software prefetches; results never depend on it. Measured
/// (docs/performance.md, "Software prefetch" and "Zen 2"):
/// - Intel Xeon, whose hardware prefetchers stop at 4 KiB pages: PowerSign float32 beyond cache 47.3 -> 40.4 ms a
///   call, GroupNorm float32 76.1 -> 68.7 ms. Every loop.
/// - AMD Zen 2, beyond cache, one thread, three interleaved rounds: PowerSign float32 [53687092] 35.4-35.7 -> 32.4
///   ms, GroupNorm float32 [103, 320, 64, 64] 65.1-65.4 -> 56.9-58.3 ms (adjacent buffers 70-73 -> 59-61),
///   GroupNormBackward [69, 320, 64, 64] adjacent 60.4-60.7 -> 53.8-57.2 (with huge pages 50.9-51.8 -> 51.4-54.2),
///   channels-last unchanged; GroupNormalizationGrad [256, 32, 8, 32, 32] lost (42.2-45.7 -> 48.2-49.1 ms), so its
///   block sums do not.
/// - AMD Zen 4 (an earlier session): a prefetch ahead of GroupNorm's statistics changed nothing; Zen 5 nor did it
///   with the passes group by group. Off there.
/// - The channels-last column sums' next block: on everywhere but AMD Zen 2 walking lane by lane, where the hardware
///   prefetchers feed the walk better alone (column_walk); strip by strip needs it (on Zen 2 GroupNorm [103, 320, 64,
///   64] channels-last float32 took 121 ms a call without it, against 55 lane by lane).
/// NNOPS_SOFTWARE_PREFETCH=0 or 1 overrides every loop (for measuring).
bool software_prefetch(PrefetchLoop loop);

/// Whether the channels-last column sums (CanonColumnSums) prefetch the next block of rows, and where to.
enum class ColumnPrefetch { kOff, kL2, kL1 };

/// How the channels-last column sums (CanonColumnSums) walk a block of rows: its (lane, strip) steps lane by lane or
/// strip by strip, and the next block's prefetch.
struct ColumnWalk {
  bool by_lane = false;
  ColumnPrefetch prefetch = ColumnPrefetch::kL2;
};

/// The column sums' walk on this CPU; results never depend on it. Measured (docs/performance.md):
/// - Lane by lane on AMD Zen 2 only, without the software prefetch (software_prefetch(kColumnBlocks) is off there):
///   GroupNorm [103, 320, 64, 64] channels-last float32, huge pages, 1 / 2 threads, 64.8-68.3 -> 57.4-58.0 /
///   33.0-45.6 -> 31.2-36.2 ms a call, GroupNormBackward [69, 320, 64, 64] 63.8-64.2 -> 58.9-62.2 / 36.9-37.8 ->
///   33.5-40.9; of that, the prefetch off alone 63.0-66.0 -> 58.3-60.7 / 34.0-34.2 -> 29.2-29.5 (GroupNorm) and
///   62.2-64.1 -> 59.2-59.8 / 32.5-34.1 -> 31.8-32.9 (GroupNormBackward). On AMD Zen 5 lane by lane lost (GroupNorm
///   0.53 -> 0.45 of the probe with the prefetch, 0.38 without), so strip by strip elsewhere (Intel: not measured).
///   NNOPS_COLUMN_WALK_BY_LANE=0 or 1 overrides.
/// - Where the walk prefetches: into L1 (prefetcht0) or L2 (prefetcht1). On AMD Zen 5, [69, 320, 64, 64]
///   channels-last, one thread, ratio to the probe, three interleaved rounds, t1 -> t0: GroupNorm float32 0.54-0.59
///   -> 0.62-0.66, bfloat16 0.27-0.36 -> 0.33-0.40, GroupNormBackward float32 0.42 -> 0.43-0.47, bfloat16 0.31-0.40
///   -> 0.41-0.46, float16 within the spread either way; on the Intel Xeon t1 was the faster (the GroupNorm call
///   0.72-0.74 -> 0.70 ns/element). So L1 on AMD Zen 5 only; NNOPS_COLUMN_PREFETCH_L1=0 or 1 overrides.
ColumnWalk column_walk();

/// Whether GroupNormBackward's row-major float32 sums (dy and dy (x - mean)) leave some accumulations on the float
/// add pipes (Pipes::kHalfAndQuarter, src/core/fp_pipes-inl.h) instead of putting all of them on the FMA pipes;
/// results never depend on it. AMD Zen 2 only, where the core widens float32 to float64 once a cycle and the
/// widening takes slots of both pipe kinds: a copy of the loop over rows of 4096 floats in L1 (docs/performance.md,
/// "Zen 2, a fourth session") 12.7-13.0 -> 11.2-11.5 cycles per 16 elements, while float16 lost (18.8 -> 19.7) and
/// bfloat16 did not change. Elsewhere off: Zen 4 and Zen 5 were not measured with it (an earlier session put all
/// of these accumulations on the FMA pipes there), Intel cores add and multiply on the same ports, and on targets
/// without FMA (ARM, SSE4) every accumulation is an add anyway. NNOPS_SPLIT_SUM_PIPES=0 or 1 overrides.
bool split_sum_pipes();

/// Whether the row-major GroupNorm and GroupNormBackward kernels write a group's streamed output while the next
/// group's statistics pass reads that group in (PipelineGroups, src/core/row_map-inl.h), rather than group by group,
/// for a call whose statistics pass reads `input_bytes`; results never depend on it. Measured (docs/performance.md,
/// "Overlapped passes" and "Zen 5"):
/// - Intel Xeon VM, whose one core loads ~14 GB/s and stores ~22 GB/s alone but ~20 GB/s of both together: GroupNorm
///   float32 [24, 320, 64, 64] 0.49 -> 0.41 ns/element on one thread. Any size.
/// - AMD Zen 5, while the inputs fit half the L3 (the loads from the L3, the streamed stores to memory): GroupNorm
///   float32 [2, 64, 16384] streamed, one thread, 48.5 -> 75.7 GB/s; from memory both ways it lost
///   ([103, 320, 64, 64] 34.5 -> 28 GB/s, GroupNormBackward [69, 320, 64, 64] 37 -> 26) unless the statistics pass
///   prefetches ahead (overlap_prefetched_passes).
/// - AMD Zen 2: row-major only, in bursts, through overlap_prefetched_passes (overlap_burst_steps).
/// - AMD Zen 4, as Zen 5 while the inputs fit half the L3, in bursts (overlap_burst_steps); GroupNorm float32
///   [2, 64, 16384] streamed, one thread (on AVX-512, as GroupNorm runs there), 536-538 us group by group, 391-398
///   overlapped step by step, 342-439 in bursts of 16. Beyond half the L3 not at all: from memory GroupNormBackward
///   [69, 320, 64, 64] took 34 ms group by group and 45 overlapped, with or without the prefetch.
/// - Elsewhere off.
/// NNOPS_OVERLAP_PASSES=0 or 1 overrides (any size).
bool overlap_passes(uint64_t input_bytes);
/// The largest `input_bytes` overlap_passes says yes to: 0 where it never does, ~0 where any size.
uint64_t overlap_passes_max_bytes();

/// Whether a row-major statistics pass that reads `input_bytes` beyond overlap_passes' limit still overlaps the passes,
/// with a software prefetch (PrefetchStream) ahead of its rows; results never depend on it. AMD Zen 2 at any size (see
/// overlap_burst_steps), and AMD Zen 5, where
/// without the prefetch the overlap lost from memory and with it both operators gain, 4 rounds each, one thread,
/// ratio to the probe (docs/performance.md, "Zen 5, 2026-12-04"): GroupNorm float32 [103, 320, 64, 64] 0.70-0.71 ->
/// 0.82-0.93, GroupNormBackward [69, 320, 64, 64] 0.77-0.89 -> 0.82-0.93; the prefetch alone changed nothing
/// (0.76-0.78). NNOPS_OVERLAP_PASSES=0 turns it off with the overlap; =1 overlaps at any size without it.
bool overlap_prefetched_passes(uint64_t input_bytes);

/// How an overlapped pass paces the output it writes beside the statistics pass (Plan::pipeline_burst): after every
/// `n` steps of the statistics (16 elements each), the output of n steps at once; results never depend on it. 1 (step
/// by step) but on AMD Zen 2, where that interleaving of non-temporal stores with the loads doubled the time
/// (GroupNorm [103, 320, 64, 64] float32, one thread, 54.7 ms group by group, 101.5 ms overlapped step by step) and
/// bursts of 8 to 16 steps (512 bytes to 1 KiB of float32 output) halved it instead: 40.8-41.5 ms; GroupNormBackward
/// [69, 320, 64, 64] 53.3 -> 38.9 ms, the UNet workload's forward 39.8 -> 32.6 ms and backward 56.3 -> 44.7 ms
/// (docs/performance.md, "Zen 2"). There: 16, and the row-major passes overlap at every size that streams
/// (overlap_prefetched_passes), with their prefetch; channels-last units stay unpipelined (UNet's channels-last forward
/// 50.2 -> 54.7 ms pipelined). AMD Zen 4: 16 as well, where its passes overlap (overlap_passes): GroupNorm float32
/// [2, 64, 16384] streamed, one thread, step by step 561-624 us (AVX2) and 390-410 (AVX-512), in bursts of 16 342-355
/// and 342-439. NNOPS_OVERLAP_PASSES=0 turns the overlap off; =1 overlaps both layouts, still in these bursts;
/// NNOPS_OVERLAP_BURST_STEPS=<n> sets n (for measuring).
int overlap_burst_steps();

/// Whether GroupNormalizationGrad writes a group's streamed float32 dx while the next group's block sums read that
/// group in (gn_grad::Plan::pipeline), in bursts of a quarter of overlap_burst_steps, where a group's inputs fit the L2
/// and all of them do not fit the L3 (the plan decides those); results never depend on it. AMD Zen 2 only
/// (docs/performance.md, "Zen 2"); an earlier session found a step-by-step interleave slower on Zen 4, and no other CPU
/// was measured with bursts. NNOPS_OVERLAP_PASSES=0 or 1 overrides.
bool overlap_block_sums();

/// The output size (bytes) from which the GroupNorm family writes its outputs with non-temporal stores, for a call that
/// `threads` threads write; results never depend on it. Measured (docs/performance.md):
/// - Intel: (L2 per core) x threads, the caches those threads could keep it in. On the Xeon VM GroupNorm float32
///   [2, 64, 16384] in L3 1.24 -> 0.68 ms a call and the UNet workload's forward 70 -> 41 ms, while outputs that
///   fit the L2 lost (0.19 -> 0.24 ns/element at 384 KiB).
/// - AMD Zen 2: the same rule as Intel. The Stable Diffusion UNet workload (61 GroupNorm layers of 0.5 to 21 MiB),
///   float32 with the prefetch on, one thread: forward 50 -> 40-41 ms, GroupNormBackward 65 -> 56-57 ms; on two
///   threads (L2 x 2 against half the L3) forward 21.0-21.5 against 21.9-23.2 ms, GroupNormBackward 28.9-30.1 against
///   30.5-31.6 ms.
/// - AMD Zen 5: one thread, its L2; more, half the L3 (the output and the input it comes from both fit). One core
///   alone moves less through the L3 than to memory with streamed stores (GroupNorm float32 [2, 64, 16384], 8 MiB
///   out, one thread: 40.8 GB/s cached, 75.7 streamed with the passes overlapped; GroupNormalizationGrad [8, 8,
///   16384] 51 -> 80 GB/s), while two cores' L3 bandwidth beats memory's as long as the data fits (same GroupNorm,
///   two threads: 108 cached, 82 streamed; GroupNormalizationGrad [8, 8, 65536], 16 MiB out and 64 MiB in all:
///   51 -> 62 streamed).
/// - AMD Zen 4: the same rule as Intel. One thread, streamed from 1 MiB with the passes overlapped against cached to
///   64 MiB before (two rounds): GroupNorm float32 [2, 64, 32768] 1.37-1.38 -> 0.95-1.01 ms, [2, 320, 64, 64] 679-695
///   -> 492-511 us, GroupNormBackward [2, 320, 64, 64] 1.03-1.12 ms -> 821-834 us (not overlapped: its inputs pass
///   half the L3); the UNet workload's backward 48.0-48.4 -> 40.9-41.4 ms. Two threads, streamed from 2 MiB against
///   64 MiB (later rounds of three): GroupNorm [2, 64, 16384] 288-346 -> 177-192 us, [2, 640, 32, 32] 168-171 ->
///   127-129, [2, 640, 64, 64] (from 4 MiB, the same plan) 0.96-1.16 -> 0.75-1.0 ms; GroupNormBackward [2, 640, 32, 32]
///   203-207 -> 175 us; the UNet workload, ten rounds, median ms: row-major forward 21.7 -> 18.6, backward 29.4 ->
///   27.3, channels-last backward 52.1 -> 47.4, channels-last forward 28.3 -> 29.9 (within its spread, 25.7-38.9
///   and 23.8-32.3). (An earlier try with half the L3 had lost on the UNet workload; two-thread figures on that VM
///   move by a quarter between runs.)
/// - Elsewhere 64 MiB, well past a typical L3.
/// NNOPS_STREAM_MIN_BYTES=<bytes> overrides (for measuring).
uint64_t stream_output_min_bytes(int threads);

/// Whether PowerSign, GroupNormalizationGrad and GroupNormBackward run float32 data on the AVX2 target where the CPU
/// also runs AVX-512 (the HWY_AVX3 targets), through NNOPS_DYNAMIC_DISPATCH (src/core/dispatch.hpp); results never
/// depend on it (every FMA target gives the same
/// bits, docs/semantics.md and tests/cross_isa_hashes.cpp). AMD Zen 4 only, which executes a 512-bit operation as two
/// 256-bit halves, so AVX-512 doubles no throughput there, while the float64 sums of the GroupNorm family keep half as
/// many independent accumulator vectors on it (16 canonical lanes in 2 vectors of 8 against 4 of 4) and wait on their
/// latency. Measured on an EPYC Zen 4 VM (docs/performance.md, "AMD Zen 4 with AVX-512"), one thread, huge pages, two
/// rounds, avx3 -> avx2: GroupNormalizationGrad [2, 4, 6144] 18.3 -> 14.9-15.2 us, [8, 8, 16384] 399 -> 335-341 us;
/// PowerSign [65536] 29.6-30.9 -> 26.1-26.4 us, [1398101] 642-651 -> 551-558 us; GroupNorm [1, 64, 1536] 18.9-19.2 ->
/// 16.6-16.9 us; GroupNormBackward [1, 64, 1024] 19.3-19.9 -> 14.7 us, [2, 64, 10922] 416-423 -> 353-363 us; from
/// memory within the spread either way. The half types stay on AVX-512, which converts them 16 at a time and was the
/// faster there (GroupNormBackward float16 [2, 64, 21845] 857-883 us against 994-1090, from memory GroupNorm float16
/// [205, 320, 64, 64] channels-last 63.5 ms against 80). GroupNorm stays on AVX-512 for float32 too: its statistics
/// interleave two rows there (CanonRowSumsPair), and the UNet workload's forward was the faster on it (30.5-31.7 ms
/// against 32.8-33.0, one thread). NNOPS_FLOAT32_AVX2=0 or 1 overrides.
bool float32_on_avx2();

/// Whether force_isa_for_testing has pinned one target: then every kernel runs on it (NNOPS_DYNAMIC_DISPATCH does not
/// move float32 to AVX2).
bool isa_forced();

/// One core's L2 (bytes): Linux's sysfs, else glibc's sysconf, else 1 MiB.
uint64_t l2_cache_bytes();
/// The L3 (bytes) as cpu0 sees it: Linux's sysfs, else glibc's sysconf, else 32 MiB.
uint64_t l3_cache_bytes();

/// One of cpu0's data or unified caches as Linux's sysfs lists it (/sys/devices/system/cpu/cpu0/cache/index*).
struct CacheInfo {
  int level = 0;
  std::string size;         ///< as sysfs writes it, e.g. "2048K"
  uint64_t bytes = 0;       ///< the same in bytes (0 where it does not parse)
  std::string shared_cpus;  ///< shared_cpu_list, e.g. "0-1"
};
/// cpu0's data and unified caches in sysfs order; empty where sysfs does not list them. The one reader of these
/// files: l2_cache_bytes and `nnops info` both go through it.
std::vector<CacheInfo> cpu0_caches();

Status invalid_arg(const char* op, const std::string& what);

/// Rank in range, dims >= 0, strides >= 0, element and byte counts and the bytes the view spans fit in
/// int64, data non-null when the tensor has elements, aligned to its element size, and its span does not
/// wrap around the address space. Any strides are accepted (layout.hpp). `numel` receives the element count.
Status check_tensor(const char* op, const char* name, const TensorView& t, int64_t* numel);

/// `t` has dtype `want`.
Status check_dtype(const char* op, const char* name, const TensorView& t, DType want, const char* want_why);

/// `t` has exactly the shape of `ref`.
Status check_same_shape(const char* op, const char* name, const TensorView& t, const char* ref_name,
                        const TensorView& ref);

/// True when two views touch a common byte (layout.hpp: views_overlap; empty tensors never overlap).
bool overlaps(const TensorView& a, const TensorView& b);

/// An output view must give each element its own address (no stride-0 or interleaved dims that collide).
Status check_output_layout(const char* op, const char* name, const TensorView& t);

/// "[64, 16, 1]".
std::string strides_string(const TensorView& t);

/// Error for two arguments whose memory overlaps.
Status overlap_error(const char* op, const char* a, const char* b);

}  // namespace nnops::detail
