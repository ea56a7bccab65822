// `nnops bench`: time per call, compulsory bytes, effective GB/s, and the ratio to a bandwidth probe with the
// same read/write mix, run on the call's own buffers (placed as --layout says), measured in the same process
// and interleaved with the operator's runs. --sweep times 1 thread against more over sizes (the thread
// grain); --workload runs whole-model workloads (tools/cli/bench_workload.cpp).
#include "tools/cli/bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/ops/op_desc.hpp"
#include "tools/cli/bench_layout.hpp"
#include "tools/cli/bench_probe.hpp"
#include "tools/cli/bench_util.hpp"
#include "tools/cli/cli_util.hpp"

namespace nnops::cli {
namespace {

struct Result {
  std::string op, dtype, size, shape, layout;
  int threads = 1;
  Timing op_t, probe_t;
  ProbeVariant probe_variant = ProbeVariant::kPlain;
  std::vector<std::pair<ProbeVariant, double>> ranked;
  bool probe_own = true;
  double bytes = 0;        // compulsory traffic per call
  double model_bytes = 0;  // traffic the algorithm needs (differs for groups larger than cache)
  double probe_bytes = 0;
  std::string error;
  double gbps() const { return bytes / op_t.median / 1e9; }
  double probe_gbps() const { return probe_bytes / probe_t.median / 1e9; }
  double ratio() const { return gbps() / probe_gbps(); }
  double model_ratio() const { return model_bytes / op_t.median / 1e9 / probe_gbps(); }
};

// Warm-up, the probe variants ranked on these buffers, then `reps` runs of the operator and of the best probe
// variant of each store kind (ProbeFinalists), alternately: all see the same machine state. Cases that fit the L3
// time each run after an untimed run of the same kernel (self_warmed_timing).
Result bench_call(const PlacedCall& call, int threads, int reps) {
  Result r;
  r.threads = threads;
  const Context ctx{threads};
  Status st;
  auto op = [&] { st = call.run(ctx); };
  op();
  op();
  const bool self_warm = self_warmed_timing(call.footprint);
  const std::vector<const ProbeSet*> sets{&call.probe};
  r.ranked = rank_probe_variants(sets, threads, 2, self_warm);
  ProbeFinalists probe(sets, threads, r.ranked, self_warm);
  std::vector<double> to;
  for (int i = 0; i < reps; ++i) {
    if (self_warm) op();
    const double t0 = now_seconds();
    op();
    to.push_back(now_seconds() - t0);
    probe.run();
  }
  r.op_t = summarize(to);
  r.probe_variant = probe.best();
  r.probe_t = probe.timing();
  if (!st) r.error = st.message();
  r.bytes = call.bytes;
  r.model_bytes = call.model_bytes;
  r.probe_bytes = call.probe.bytes();
  r.probe_own = call.probe_own;
  return r;
}

void print_header() {
  std::printf("%-25s %-8s %-18s %-20s %-8s %3s %9s %19s %6s %6s %11s %-9s %5s %5s\n", "operator", "dtype", "size",
              "shape", "layout", "thr", "median", "spread (min..max)", "GB/s", "probe", "probe range", "variant",
              "ratio", "model");
}

void print_row(const Result& r) {
  if (!r.error.empty()) {
    std::printf("%-25s %-8s %-18s ERROR: %s\n", r.op.c_str(), r.dtype.c_str(), r.size.c_str(), r.error.c_str());
    return;
  }
  const std::string spread = format_time(r.op_t.min) + ".." + format_time(r.op_t.max);
  char range[32];
  std::snprintf(range, sizeof range, "%.0f..%.0f", r.probe_bytes / r.probe_t.max / 1e9,
                r.probe_bytes / r.probe_t.min / 1e9);
  std::printf("%-25s %-8s %-18s %-20s %-8s %3d %9s %19s %6.1f %6.1f %11s %-9s %5.2f %5.2f%s\n", r.op.c_str(),
              r.dtype.c_str(), r.size.c_str(), r.shape.c_str(), r.layout.c_str(), r.threads,
              format_time(r.op_t.median).c_str(), spread.c_str(), r.gbps(), r.probe_gbps(), range,
              probe_variant_name(r.probe_variant), r.ratio(), r.model_ratio(), r.probe_own ? "" : " *");
  std::fflush(stdout);
}

void print_footer() {
  std::printf(
      "GB/s: compulsory bytes per call / median time. probe: GB/s of the fastest of several streaming kernels "
      "(variant) with the operator's read/write mix (e.g. PowerSign: read 3, update 2 in place; "
      "GroupNormalizationGrad: read 3, write 1), run on the operator's own buffers (integer lanes; inputs left "
      "unchanged), same threads, interleaved with the operator's calls (where the tensors fit the L3, each timed run "
      "right after an untimed run of the same kernel, as in a loop of its own calls); probe range: its "
      "slowest..fastest run. "
      "ratio = GB/s / probe. model: ratio counting the traffic the algorithm needs (e.g. GroupNormalizationGrad "
      "groups larger than 1 MiB are read twice). layout: huge = 2 MiB-aligned huge-page buffers; adjacent = "
      "placed as aligned_alloc(64) places fresh arrays (4 KiB pages, each 4 KiB after the last, 64 B into its "
      "page); malloc = adjacent 16 B into its page, as plain malloc places them; offset = adjacent with 4 KiB + 64 B "
      "more between consecutive buffers. * probe on separate buffers.\n");
}

std::string json_result(const Result& r) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"op\": \"%s\", \"dtype\": \"%s\", \"size\": \"%s\", \"shape\": \"%s\", \"layout\": \"%s\", "
                "\"threads\": %d, \"median_s\": %.9g, \"min_s\": %.9g, \"max_s\": %.9g, \"bytes\": %.0f, "
                "\"gbps\": %.4g, \"probe_gbps\": %.4g, \"probe_min_gbps\": %.4g, \"probe_max_gbps\": %.4g, "
                "\"probe_variant\": \"%s\", \"probe_on_operator_buffers\": %s, \"ratio\": %.4g, "
                "\"model_ratio\": %.4g, ",
                r.op.c_str(), r.dtype.c_str(), r.size.c_str(), r.shape.c_str(), r.layout.c_str(), r.threads,
                r.op_t.median, r.op_t.min, r.op_t.max, r.bytes, r.gbps(), r.probe_gbps(),
                r.probe_bytes / r.probe_t.max / 1e9, r.probe_bytes / r.probe_t.min / 1e9,
                probe_variant_name(r.probe_variant), r.probe_own ? "true" : "false", r.ratio(), r.model_ratio());
  return std::string(buf) + "\"probe_variants_gbps\": " + variants_json(r.ranked, r.probe_bytes) +
         ", \"error\": " + json_string(r.error) + "}";
}

// ---- --sweep: 1 thread against more, from a few hundred elements to MiBs ----------------------------------

struct SweepRow {
  std::string op, dtype, shape;
  int64_t numel = 0;
  int threads = 2;
  Timing t1, tn;  // seconds per call
  std::string error;
};

// The shape with about `n` elements: the first bench case's shape with its last dim scaled.
std::vector<int64_t> sweep_shape(const ops::OpDesc& d, DType t, int64_t n) {
  std::vector<int64_t> s = d.bench_cases(t).front().shape;
  int64_t lead = 1;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) lead *= s[i];
  s.back() = std::max<int64_t>(1, n / lead);
  return s;
}

SweepRow sweep_point(const ops::OpDesc& d, DType t, int64_t n, int threads, int reps) {
  SweepRow r;
  r.op = d.name;
  r.dtype = dtype_name(t);
  ops::ProblemSpec spec;
  spec.dtype = t;
  spec.shape = sweep_shape(d, t, n);
  r.shape = shape_string(spec.shape);
  r.threads = threads;
  PlacedCalls pc = place_calls({{&d, spec}}, Layout::kHuge, false);
  const PlacedCall& call = pc.calls.front();
  r.numel = call.views[0].numel();
  Status st;
  const Context c1{1}, cn{threads};
  // Calls per sample: enough for ~0.3 ms, so that timer resolution and the loop do not count.
  for (int i = 0; i < 3; ++i) st = call.run(cn);
  double one = 1;
  for (int i = 0; i < 5; ++i) {
    const double t0 = now_seconds();
    st = call.run(c1);
    one = std::min(one, std::max(now_seconds() - t0, 1e-7));
  }
  const int k = static_cast<int>(std::clamp(3e-4 / one, 1.0, 10000.0));
  std::vector<double> s1, sn;
  for (int i = 0; i < reps; ++i) {
    for (int pass = 0; pass < 2; ++pass) {
      const Context& ctx = (i + pass) % 2 ? cn : c1;  // alternate which goes first
      // One untimed call first, so that each sample starts from where a loop of calls on this many threads leaves
      // the caches: straight after the other thread count, the data sat in the other core's L2 and the 1-thread times
      // of sizes up to a few MiB read 0.38-0.40 ns an element where a loop of 1-thread calls reads 0.24-0.32
      // (GroupNorm, AMD Zen 2).
      st = call.run(ctx);
      const double a = now_seconds();
      for (int j = 0; j < k; ++j) st = call.run(ctx);
      ((i + pass) % 2 ? sn : s1).push_back((now_seconds() - a) / k);
    }
  }
  r.t1 = summarize(s1);
  r.tn = summarize(sn);
  if (!st) r.error = st.message();
  return r;
}

int run_sweep(const std::vector<const ops::OpDesc*>& ops_list, const std::vector<DType>& dtypes,
              const std::vector<int>& thread_list, int reps, bool json) {
  std::vector<int> more;
  for (int t : thread_list)
    if (t > 1) more.push_back(t);
  if (more.empty()) more.push_back(std::max(2, resolve_num_threads(Context{})));
  std::vector<int64_t> sizes;
  for (int e = 8; e <= 22; ++e) {
    sizes.push_back(int64_t{1} << e);
    if (e < 22) sizes.push_back((int64_t{3} << e) / 2);
  }
  if (!json) {
    std::printf("%-25s %-8s %-20s %9s %3s %10s %10s %6s %10s %10s %6s\n", "operator", "dtype", "shape", "elements",
                "thr", "1 thread", "N threads", "N/1", "min 1", "min N", "N/1");
  }
  std::vector<std::string> rows;
  bool ok = true;
  for (const ops::OpDesc* d : ops_list) {
    for (DType t : dtypes) {
      for (int64_t n : sizes) {
        for (int th : more) {
          const SweepRow r = sweep_point(*d, t, n, th, std::max(reps, 15));
          if (!r.error.empty()) ok = false;
          const double q = r.tn.median / r.t1.median, qmin = r.tn.min / r.t1.min;
          if (!json) {
            std::printf("%-25s %-8s %-20s %9lld %3d %10s %10s %6.2f %10s %10s %6.2f%s\n", r.op.c_str(), r.dtype.c_str(),
                        r.shape.c_str(), static_cast<long long>(r.numel), r.threads, format_time(r.t1.median).c_str(),
                        format_time(r.tn.median).c_str(), q, format_time(r.t1.min).c_str(),
                        format_time(r.tn.min).c_str(), qmin, q > 1.05 ? "  slower" : "");
            std::fflush(stdout);
          }
          char buf[512];
          std::snprintf(buf, sizeof buf,
                        "{\"op\": \"%s\", \"dtype\": \"%s\", \"shape\": \"%s\", \"numel\": %lld, \"threads\": %d, "
                        "\"median_1_thread_s\": %.9g, \"median_threads_s\": %.9g, \"ratio\": %.4g, "
                        "\"min_1_thread_s\": %.9g, \"min_threads_s\": %.9g, \"min_ratio\": %.4g, \"error\": ",
                        r.op.c_str(), r.dtype.c_str(), r.shape.c_str(), static_cast<long long>(r.numel), r.threads,
                        r.t1.median, r.tn.median, q, r.t1.min, r.tn.min, qmin);
          rows.push_back(std::string(buf) + json_string(r.error) + "}");
        }
      }
    }
  }
  if (json) {
    std::printf("  \"sweep\": [\n");
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::printf("    %s%s\n", rows[i].c_str(), i + 1 < rows.size() ? "," : "");
    std::printf("  ]\n");
  } else {
    std::printf(
        "N/1: median (and fastest) time per call on N threads / on 1 thread, samples of 1 and N threads "
        "alternating, each after one untimed call on its own thread count (the operator's own thread choice applies: "
        "below its grain an N-thread call runs on 1). Calls repeat on the same data (in cache); 'slower' marks a "
        "median N/1 > 1.05.\n");
  }
  return ok ? 0 : 1;
}

bool parse_shape(const std::string& s, std::vector<int64_t>* out) {
  out->clear();
  std::size_t i = 0;
  while (i <= s.size()) {
    const std::size_t j = std::min(s.find(',', i), s.size());
    const std::string tok = s.substr(i, j - i);
    if (tok.empty() || tok.find_first_not_of("0123456789") != std::string::npos || tok.size() > 12) return false;
    out->push_back(std::stoll(tok));
    i = j + 1;
  }
  return !out->empty();
}

}  // namespace

int run_bench(const BenchOptions& o) {
  std::vector<const ops::OpDesc*> ops_list;
  if (o.ops.empty()) {
    ops_list = ops::all_ops();
  } else {
    for (const std::string& name : o.ops) {
      const ops::OpDesc* d = ops::find_op(name);
      if (d == nullptr) {
        std::fprintf(stderr, "nnops bench: unknown operator '%s'\n", name.c_str());
        return 2;
      }
      ops_list.push_back(d);
    }
  }
  std::vector<DType> dtypes;
  for (const std::string& d :
       o.dtypes.empty() ? std::vector<std::string>{"float32", "float16", "bfloat16"} : o.dtypes) {
    const auto t = parse_dtype(d);
    if (!t) {
      std::fprintf(stderr, "nnops bench: unknown dtype '%s'; expected float32, float16 or bfloat16\n", d.c_str());
      return 2;
    }
    dtypes.push_back(*t);
  }
  std::vector<Layout> layouts;
  for (const std::string& l : o.layouts.empty() ? std::vector<std::string>{"huge", "adjacent"} : o.layouts) {
    const auto v = parse_layout(l);
    if (!v) {
      std::fprintf(stderr, "nnops bench: unknown layout '%s'; expected huge, offset or adjacent\n", l.c_str());
      return 2;
    }
    if (std::find(layouts.begin(), layouts.end(), *v) == layouts.end()) layouts.push_back(*v);
  }
  std::vector<int> threads = o.threads;
  if (threads.empty()) {
    threads = {1};
    const int all = resolve_num_threads(Context{});
    if (all > 1) threads.push_back(all);
  }
  std::vector<int64_t> custom;
  if (!o.shape.empty() && !parse_shape(o.shape, &custom)) {
    std::fprintf(stderr, "nnops bench: --shape '%s': expected dims like 33554432 or 2,320,64,64\n", o.shape.c_str());
    return 2;
  }
  if (o.channels_last && custom.empty()) {
    std::fprintf(stderr, "nnops bench: --channels-last applies to a --shape case (the size classes have their own)\n");
    return 2;
  }
  const std::vector<double> load = load_average();
  if (o.json) {
    std::printf("{\"nnops_version\": \"%s\", \"isa\": \"%s\", \"load_average\": [%.2f, %.2f, %.2f],\n", version(),
                current_isa().c_str(), load[0], load[1], load[2]);
  } else {
    std::printf("nnops %s bench: SIMD target %s, load average %.2f %.2f %.2f\n", version(), current_isa().c_str(),
                load[0], load[1], load[2]);
  }

  if (o.sweep) {
    const int rc = run_sweep(ops_list, dtypes, o.threads, o.reps, o.json);
    if (o.json) std::printf("}\n");
    return rc;
  }

  if (!o.workloads.empty()) {
    bench_detail::WorkloadArgs a;
    for (DType t : dtypes) a.dtypes.push_back(static_cast<int>(t));
    a.threads = threads;
    for (Layout l : layouts) a.layouts.push_back(static_cast<int>(l));
    a.reps = o.reps;
    a.json = o.json;
    std::vector<std::string> json;
    bool ok = true;
    for (const std::string& w : o.workloads) {
      if (w == "resnet50") {
        ok = bench_detail::run_resnet50(a, &json) && ok;
      } else if (w == "unet") {
        ok = bench_detail::run_unet(a, &json) && ok;
      } else {
        std::fprintf(stderr, "nnops bench: unknown workload '%s'; expected resnet50 or unet\n", w.c_str());
        return 2;
      }
    }
    if (o.json) {
      std::printf("  \"workloads\": [\n");
      for (std::size_t i = 0; i < json.size(); ++i)
        std::printf("    %s%s\n", json[i].c_str(), i + 1 < json.size() ? "," : "");
      std::printf("  ]\n}\n");
    }
    return ok ? 0 : 1;
  }

  std::vector<std::string> sizes = o.sizes;
  if (sizes.empty()) sizes = {"l2", "l3", "dram"};
  std::vector<Result> results;
  if (!o.json) print_header();
  for (const ops::OpDesc* d : ops_list) {
    for (DType t : dtypes) {
      std::vector<ops::BenchCase> cases;
      if (!custom.empty()) {
        if (o.channels_last) {
          cases.push_back({"custom-channels-last", custom, {}, "channels_last"});
        } else {
          cases.push_back({"custom", custom, {}, ""});
        }
      } else {
        // A size class also selects its variants ("dram" includes "dram-big").
        for (const ops::BenchCase& c : d->bench_cases(t)) {
          const bool wanted = std::any_of(sizes.begin(), sizes.end(), [&](const std::string& s) {
            return c.size == s || c.size.rfind(s + "-", 0) == 0;
          });
          if (wanted) cases.push_back(c);
        }
      }
      for (const ops::BenchCase& c : cases) {
        ops::ProblemSpec spec;
        spec.dtype = t;
        spec.shape = c.shape;
        spec.attrs = c.attrs;
        if (static_cast<int>(c.shape.size()) < d->min_rank || static_cast<int>(c.shape.size()) > d->max_rank) {
          std::fprintf(stderr, "nnops bench: --shape %s: %s takes rank %d to %d\n", o.shape.c_str(), d->name,
                       d->min_rank, d->max_rank);
          return 2;
        }
        const std::vector<CallSpec> specs{{d, spec}};
        const std::vector<ops::Problem> problems = make_problems(specs);
        for (Layout l : layouts) {
          // A copy of the same problem for each layout: every layout starts from the same values.
          const PlacedCalls pc = place_calls(specs, l, c.layout == "channels_last", {}, &problems);
          for (int th : threads) {
            Result r = bench_call(pc.calls.front(), th, o.reps);
            r.op = d->name;
            r.dtype = dtype_name(t);
            r.size = c.size;
            r.shape = shape_string(c.shape);
            r.layout = layout_name(l);
            results.push_back(r);
            if (!o.json) print_row(results.back());
          }
        }
      }
    }
  }
  if (o.json) {
    std::printf("  \"results\": [\n");
    for (std::size_t i = 0; i < results.size(); ++i) {
      std::printf("    %s%s\n", json_result(results[i]).c_str(), i + 1 < results.size() ? "," : "");
    }
    std::printf("  ]\n}\n");
  } else {
    print_footer();
  }
  for (const Result& r : results)
    if (!r.error.empty()) return 1;
  return 0;
}

}  // namespace nnops::cli
