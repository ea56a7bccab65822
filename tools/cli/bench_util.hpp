// What `nnops bench`'s modes share (tools/cli/bench.cpp: operator cases and --sweep;
// tools/cli/bench_workload.cpp: --workload): timing summaries, calls whose tensors are placed in memory as
// a --layout says, and the same-mix probe on a call's own buffers with its best variant.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "nnops/context.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"
#include "src/ops/op_desc.hpp"
#include "tools/cli/bench_layout.hpp"
#include "tools/cli/bench_probe.hpp"

namespace nnops::cli {

struct Timing {
  double median = 0, min = 0, max = 0;
};
Timing summarize(std::vector<double> v);

/// The probe of one call: arrays (reads, then outputs unless in place) of `lanes` 32-bit lanes each.
struct ProbeSet {
  std::vector<void*> arrays;
  int reads = 0, writes = 0;
  bool in_place = false;
  std::size_t lanes = 0;
  /// Bytes the probe moves: (reads + writes) * lanes * 4.
  double bytes() const { return static_cast<double>(reads + writes) * static_cast<double>(lanes) * 4; }
};

/// One operator call on placed tensors.
struct PlacedCall {
  const ops::OpDesc* d = nullptr;
  std::vector<int64_t> shape;  ///< the main shape
  std::vector<TensorView> views;
  ops::Attrs attrs;
  double bytes = 0, model_bytes = 0;  ///< the descriptor's, for this problem
  double footprint = 0;               ///< the bytes of its tensors
  /// The probe with the descriptor's mix on this call's own tensors (mapped by role: the arrays of the main
  /// tensor's size that the call reads, in place first, and then the ones it writes). `probe_own` is false
  /// when the tensors do not fit the mix and the probe got separate buffers of the same layout.
  ProbeSet probe;
  bool probe_own = true;
  Status run(const Context& ctx) const { return ops::run_prepared(d->name, d->prepare, views.data(), attrs, ctx); }
};

struct PlacedCalls {
  Placement mem;
  Placement probe_mem;  ///< only for calls whose tensors do not fit their probe mix
  std::vector<PlacedCall> calls;
};

/// One call to place: an operator and the problem its generator makes.
struct CallSpec {
  const ops::OpDesc* d;
  ops::ProblemSpec spec;
};

/// Generates each problem and copies its tensors into memory placed as `layout` says, in allocation order
/// `order` ((call, tensor) pairs; present tensors it leaves out follow in call and descriptor order).
/// `channels_last`: tensors of rank >= 3 in [N, d2, ..., C] memory (strided views). The problems are
/// generated one at a time and dropped once copied, so the memory peak is the placed tensors and one problem.
/// `problems`: the specs' problems made already (make_problems), to place the same data again; they are
/// copied, not consumed.
PlacedCalls place_calls(const std::vector<CallSpec>& specs, Layout layout, bool channels_last,
                        const std::vector<std::pair<int, int>>& order = {},
                        const std::vector<ops::Problem>* problems = nullptr);

/// The problems of the specs (each descriptor's generator), for place_calls.
std::vector<ops::Problem> make_problems(const std::vector<CallSpec>& specs);

/// Runs the probe `v` over every set in turn (one parallel region each).
void run_probes(const std::vector<const ProbeSet*>& sets, int threads, ProbeVariant v);

/// The variants that apply to the sets, each timed `rounds` times in turn (after one warm-up pass); returns
/// them with their fastest times, fastest first. `self_warm`: each timed run right after an untimed run of the same
/// variant (see self_warmed_timing).
std::vector<std::pair<ProbeVariant, double>> rank_probe_variants(const std::vector<const ProbeSet*>& sets, int threads,
                                                                 int rounds = 2, bool self_warm = false);

/// Whether a case of `bytes` (its operands' footprint) times each run right after an untimed run of the same kernel,
/// so that every kernel meets the caches as it leaves them itself, as in a loop of its own calls: for cases that fit
/// the L3. Otherwise the kernels alternate and each meets the caches as the previous one left them, which only matters
/// where the data stays cached: the probe's streamed variant, run just before each operator call, pushed the
/// operator's in-cache output out to memory (GroupNorm float32 [1, 64, 768] on AMD Zen 2: 18.8-19.5 us a
/// call, 14.2-14.5 in a loop of calls), and an operator that streams its output did the same to the cached probe after
/// it.
bool self_warmed_timing(double bytes);

/// The probe timed next to an operator: from a ranking, the fastest variant of each store kind (cached stores,
/// non-temporal stores), each run once per `run()` and timed; `best()` is the one with the lower median. The
/// ranking's two quick rounds alone had picked one variant for the whole case, and a slow moment during them
/// (this VM's L3 is shared with other tenants) could put the cached kind first where the streamed one was faster
/// for the rest of the case: GroupNorm float32 in L3 on AMD Zen 5 read 85 GB/s against a probe of 47, its
/// non-temporal variant measured 85 a minute later.
class ProbeFinalists {
 public:
  ProbeFinalists(std::vector<const ProbeSet*> sets, int threads,
                 const std::vector<std::pair<ProbeVariant, double>>& ranked, bool self_warm = false);
  void run();  // one timed run of each finalist (each after an untimed one where self_warm)
  ProbeVariant best() const;
  Timing timing() const;  // of best()

 private:
  std::size_t best_index() const;
  std::vector<const ProbeSet*> sets_;
  int threads_;
  bool self_warm_;
  std::vector<ProbeVariant> v_;
  std::vector<std::vector<double>> t_;
};

/// Load averages (1, 5, 15 minutes) from /proc/loadavg; zeros where unavailable.
std::vector<double> load_average();

/// `s` as a JSON string literal, quotes included (error messages may hold quotes, backslashes, newlines).
std::string json_string(const std::string& s);

/// "name": value pairs of the ranked probe variants as GB/s for `bytes`, for JSON.
std::string variants_json(const std::vector<std::pair<ProbeVariant, double>>& ranked, double bytes);

}  // namespace nnops::cli
