// `nnops bench`: time per call, compulsory bytes, effective GB/s, and the ratio to a bandwidth probe
// with the same read/write mix measured in the same process, interleaved with the operator's runs.
#include "tools/cli/bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/core/layout.hpp"
#include "src/ops/op_desc.hpp"
#include "src/ops/problem_util.hpp"
#include "tools/cli/bench_probe.hpp"
#include "tools/cli/cli_util.hpp"

namespace nnops::cli {
namespace {

struct Timing {
  double median = 0, min = 0, max = 0;
};

Timing summarize(std::vector<double> v) {
  Timing t;
  std::sort(v.begin(), v.end());
  t.median = median(v);
  t.min = v.front();
  t.max = v.back();
  return t;
}

struct Result {
  std::string op, dtype, size, shape;
  int threads = 1;
  Timing op_t, probe_t;
  double bytes = 0;        // compulsory traffic per call
  double model_bytes = 0;  // traffic the algorithm needs (differs for groups larger than cache)
  std::string error;
  double gbps() const { return bytes / op_t.median / 1e9; }
  double probe_gbps() const { return probe_bytes / probe_t.median / 1e9; }
  double ratio() const { return gbps() / probe_gbps(); }
  double model_ratio() const { return model_bytes / op_t.median / 1e9 / probe_gbps(); }
  double probe_bytes = 0;
};

Result make_result(const char* op, DType t, const std::string& size, const std::string& shape, int threads) {
  Result r;
  r.op = op;
  r.dtype = dtype_name(t);
  r.size = size;
  r.shape = shape;
  r.threads = threads;
  return r;
}

// Runs op and probe alternately `reps` times after warm-up; both see the same machine state.
template <class Op, class Probe>
void measure(int reps, Op&& op, Probe&& probe, Timing* op_t, Timing* probe_t) {
  for (int i = 0; i < 2; ++i) {
    op();
    probe();
  }
  std::vector<double> to, tp;
  for (int i = 0; i < reps; ++i) {
    double t0 = now_seconds();
    op();
    to.push_back(now_seconds() - t0);
    t0 = now_seconds();
    probe();
    tp.push_back(now_seconds() - t0);
  }
  *op_t = summarize(to);
  *probe_t = summarize(tp);
}

Result bench_case(const ops::OpDesc& d, DType t, const ops::BenchCase& c, int threads, int reps) {
  Result r = make_result(d.name, t, c.size, shape_string(c.shape), threads);
  ops::ProblemSpec spec;
  spec.dtype = t;
  spec.shape = c.shape;
  spec.attrs = c.attrs;
  ops::Problem p = d.make_problem(spec);
  std::vector<TensorView> v = p.views();
  // A channels-last case: every tensor of rank >= 3 moved to [N, d2, ..., C] memory (same bytes, strided view).
  std::vector<HostBuffer> relaid(p.t.size());
  if (c.layout == "channels_last") {
    for (std::size_t i = 0; i < p.t.size(); ++i) {
      const std::vector<int64_t>& sh = p.t[i].shape();
      if (!p.present[i] || sh.size() < 3) continue;
      const int r = static_cast<int>(sh.size());
      std::vector<int64_t> st(r);
      int64_t acc = sh[1];
      st[1] = 1;
      for (int k = r - 1; k >= 2; --k) {
        st[k] = acc;
        acc *= sh[k];
      }
      st[0] = acc;
      relaid[i] = HostBuffer(p.t[i].dtype(), sh);
      v[i] = TensorView::strided(relaid[i].data(), p.t[i].dtype(), sh.data(), st.data(), r);
      detail::scatter_dense(p.t[i].data(), v[i]);
    }
  }
  const Context ctx{threads};
  Status st;
  auto op = [&] { st = ops::run_prepared(d.name, d.prepare, v.data(), p.attrs, ctx); };
  // Probe arrays of the main tensor's byte size (float32 lanes), separate from the operator's data.
  const ops::ProbeMix mix = d.probe;
  const int64_t pn = static_cast<int64_t>(p.t[0].bytes() / 4);
  const int narrays = mix.reads + (mix.in_place ? 0 : mix.writes);
  std::vector<HostBuffer> arrays;
  std::vector<float*> ptrs;
  for (int k = 0; k < narrays; ++k) {
    arrays.emplace_back(DType::kFloat32, std::vector<int64_t>{pn});
    // The in-place probe adds the last array to the others on every run: tiny values keep them normal.
    const bool addend = mix.in_place && k == mix.reads - 1;
    ops::fill_uniform(arrays.back(), 100 + k, addend ? -1e-30f : 0.0f, addend ? 1e-30f : 1.0f);
    ptrs.push_back(static_cast<float*>(arrays.back().data()));
  }
  auto probe = [&](bool streaming) {
    probe_mix(ptrs.data(), mix.reads, mix.writes, mix.in_place, static_cast<size_t>(pn), threads, streaming);
  };
  measure(reps, op, [&] { probe(false); }, &r.op_t, &r.probe_t);
  if (!mix.in_place) {  // the better of plain and non-temporal stores
    probe(true);
    const Timing streaming = summarize(time_calls(reps, [&] { probe(true); }));
    if (streaming.median < r.probe_t.median) r.probe_t = streaming;
  }
  if (!st) r.error = st.message();
  r.bytes = d.bytes(p);
  r.model_bytes = d.model_bytes ? d.model_bytes(p) : r.bytes;
  r.probe_bytes = static_cast<double>(mix.reads + mix.writes) * p.t[0].bytes();
  return r;
}

void print_header() {
  std::printf("%-25s %-8s %-8s %-24s %3s %10s %21s %8s %8s %6s %6s\n", "operator", "dtype", "size", "shape", "thr",
              "median", "spread (min..max)", "GB/s", "probe", "ratio", "model");
}

void print_row(const Result& r) {
  if (!r.error.empty()) {
    std::printf("%-25s %-8s %-8s ERROR: %s\n", r.op.c_str(), r.dtype.c_str(), r.size.c_str(), r.error.c_str());
    return;
  }
  {
    const std::string spread = format_time(r.op_t.min) + ".." + format_time(r.op_t.max);
    std::printf("%-25s %-8s %-8s %-24s %3d %10s %21s %8.1f %8.1f %6.2f %6.2f\n", r.op.c_str(), r.dtype.c_str(),
                r.size.c_str(), r.shape.c_str(), r.threads, format_time(r.op_t.median).c_str(), spread.c_str(),
                r.gbps(), r.probe_gbps(), r.ratio(), r.model_ratio());
    std::fflush(stdout);
  }
}

void print_footer() {
  std::printf(
      "GB/s: compulsory bytes per call / median time. probe: a streaming kernel with the operator's read/write mix "
      "(e.g. PowerSign: read 3, update 2 in place; GroupNormalizationGrad: read 3, write 1, best of plain and "
      "non-temporal stores), same threads, same bytes. ratio = GB/s / probe. model: ratio counting the traffic the "
      "algorithm needs (e.g. GroupNormalizationGrad groups larger than 1 MiB are read twice).\n");
}

void print_json(const std::vector<Result>& rs) {
  std::printf("{\"nnops_version\": \"%s\", \"isa\": \"%s\", \"results\": [\n", version(), current_isa().c_str());
  for (size_t i = 0; i < rs.size(); ++i) {
    const Result& r = rs[i];
    std::printf(
        "  {\"op\": \"%s\", \"dtype\": \"%s\", \"size\": \"%s\", \"shape\": \"%s\", \"threads\": %d, "
        "\"median_s\": %.9g, \"min_s\": %.9g, \"max_s\": %.9g, \"bytes\": %.0f, \"gbps\": %.4g, "
        "\"probe_gbps\": %.4g, \"ratio\": %.4g, \"model_ratio\": %.4g, \"error\": \"%s\"}%s\n",
        r.op.c_str(), r.dtype.c_str(), r.size.c_str(), r.shape.c_str(), r.threads, r.op_t.median, r.op_t.min,
        r.op_t.max, r.bytes, r.gbps(), r.probe_gbps(), r.ratio(), r.model_ratio(), r.error.c_str(),
        i + 1 < rs.size() ? "," : "");
  }
  std::printf("]}\n");
}

}  // namespace

int run_bench(const BenchOptions& o) {
  std::vector<std::string> names = o.ops;
  if (names.empty()) {
    for (const ops::OpDesc* d : ops::all_ops()) names.push_back(d->name);
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
  std::vector<int> threads = o.threads;
  if (threads.empty()) {
    threads = {1};
    const int all = resolve_num_threads(Context{});
    if (all > 1) threads.push_back(all);
  }
  std::vector<std::string> sizes = o.sizes;
  if (sizes.empty()) sizes = {"l2", "l3", "dram"};
  std::vector<Result> results;
  if (!o.json) {
    std::printf("nnops %s bench: SIMD target %s\n", version(), current_isa().c_str());
    print_header();
  }
  for (const std::string& name : names) {
    const ops::OpDesc* d = ops::find_op(name);
    if (d == nullptr) {
      std::fprintf(stderr, "nnops bench: unknown operator '%s'\n", name.c_str());
      return 2;
    }
    for (DType t : dtypes) {
      // A size class also selects its variants ("dram" includes "dram-big").
      for (const ops::BenchCase& c : d->bench_cases(t)) {
        const bool wanted = std::any_of(sizes.begin(), sizes.end(), [&](const std::string& s) {
          return c.size == s || c.size.rfind(s + "-", 0) == 0;
        });
        if (!wanted) continue;
        for (int th : threads) {
          results.push_back(bench_case(*d, t, c, th, o.reps));
          if (!o.json) print_row(results.back());
        }
      }
    }
  }
  if (o.json)
    print_json(results);
  else
    print_footer();
  for (const Result& r : results)
    if (!r.error.empty()) return 1;
  return 0;
}

}  // namespace nnops::cli
