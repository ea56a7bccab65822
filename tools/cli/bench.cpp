// `nnops bench`: time per call, compulsory bytes, effective GB/s, and the ratio to a bandwidth probe
// with the same read/write mix measured in the same process, interleaved with the operator's runs.
#include "tools/cli/bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
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

// Footprints: "l2" fits one core's L2 with room to spare, "l3" fits the shared L3, "dram" moves at least
// 1 GiB per call (far beyond any cache).
constexpr double kL2Footprint = 768.0 * 1024, kL3Footprint = 16.0 * 1024 * 1024, kDramMoved = 1024.0 * 1024 * 1024;

// Runs op and probe alternately `reps` times after warm-up; both see the same machine state.
template <class Op, class Probe>
void measure(int reps, Op&& op, Probe&& probe, Result* r) {
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
  r->op_t = summarize(to);
  r->probe_t = summarize(tp);
}

// Probe with read-3-write-1: the better of plain and streaming stores (each timed separately).
Timing probe_r3w1(HostBuffer& a, HostBuffer& b, HostBuffer& c, HostBuffer& d, int threads, int reps) {
  const size_t n = a.bytes() / 4;
  auto run = [&](bool nt) {
    auto probe = [&] {
      probe_read3_write1(static_cast<float*>(a.data()), static_cast<float*>(b.data()), static_cast<float*>(c.data()),
                         static_cast<float*>(d.data()), n, threads, nt);
    };
    time_calls(2, probe);  // warm-up
    return summarize(time_calls(reps, probe));
  };
  const Timing plain = run(false), streaming = run(true);
  return plain.median <= streaming.median ? plain : streaming;
}

Result bench_power_sign(DType t, const std::string& size, int threads, int reps) {
  const double s = static_cast<double>(dtype_size(t));
  const int64_t n = size == "l2"   ? static_cast<int64_t>(kL2Footprint / (3 * s))
                    : size == "l3" ? static_cast<int64_t>(kL3Footprint / (3 * s))
                                   : static_cast<int64_t>(std::ceil(kDramMoved / (5 * s)));
  Result r = make_result("inplace_apply_power_sign", t, size, "[" + std::to_string(n) + "]", threads);
  HostBuffer var(t, {n}), m(t, {n}), grad(t, {n}), lr(t, {1}), lb(t, {1}), sd(t, {1}), beta(t, {1});
  fill_uniform(var, 1, -1, 1);
  fill_uniform(m, 2, -0.01f, 0.01f);
  fill_uniform(grad, 3, -0.01f, 0.01f);
  lr.set(0, 1e-6);  // tiny steps keep the data in range over many timed calls
  lb.set(0, 1.0);
  sd.set(0, 0.99);
  beta.set(0, 0.9);
  // Probe arrays of the same byte size (float32 lanes), separate from the operator's data.
  const int64_t pn = static_cast<int64_t>(var.bytes() / 4);
  HostBuffer pa(DType::kFloat32, {pn}), pb(DType::kFloat32, {pn}), pc(DType::kFloat32, {pn});
  fill_uniform(pa, 4, 0, 1);
  fill_uniform(pb, 5, 0, 1);
  fill_uniform(pc, 6, -1e-30f, 1e-30f);  // adds almost nothing: values stay normal over any number of runs
  const Context ctx{threads};
  Status st;
  measure(
      reps,
      [&] {
        st = inplace_apply_power_sign(var.view(), m.view(), lr.view(), lb.view(), sd.view(), beta.view(), grad.view(),
                                      false, ctx);
      },
      [&] {
        probe_read3_update2(static_cast<float*>(pa.data()), static_cast<float*>(pb.data()),
                            static_cast<float*>(pc.data()), static_cast<size_t>(pn), threads);
      },
      &r);
  if (!st) r.error = st.message();
  r.bytes = r.model_bytes = r.probe_bytes = 5.0 * var.bytes();
  return r;
}

Result bench_group_norm_grad(DType t, const std::string& size, int threads, int reps) {
  const double s = static_cast<double>(dtype_size(t));
  std::vector<int64_t> shape;
  if (size == "l2") {
    shape = {2, 4, static_cast<int64_t>(kL2Footprint / (4 * s) / 8)};
  } else if (size == "l3") {
    shape = {8, 8, static_cast<int64_t>(kL3Footprint / (4 * s) / 64)};
  } else if (size == "dram") {  // many groups of 8192 elements (each fits L2): the common case
    shape = {static_cast<int64_t>(std::ceil(kDramMoved / (4 * s) / (32.0 * 8192))), 32, 8, 32, 32};
  } else {  // "dram-big": a few groups far larger than L2: the second pass must re-read
    shape = {2, 4, int64_t{1} << 22};
  }
  Result r = make_result("group_normalization_grad", t, size, shape_string(shape), threads);
  HostBuffer x(t, shape), dy(t, shape), gamma(t, shape), dx(t, shape);
  HostBuffer mean(DType::kFloat32, {shape[0], shape[1]}), rstd(DType::kFloat32, {shape[0], shape[1]});
  fill_uniform(x, 1, -2, 2);
  fill_uniform(dy, 2, -1, 1);
  fill_uniform(gamma, 3, 0.5f, 1.5f);
  fill_uniform(rstd, 4, 0.5f, 2);
  const int64_t pn = static_cast<int64_t>(x.bytes() / 4);
  HostBuffer pa(DType::kFloat32, {pn}), pb(DType::kFloat32, {pn}), pc(DType::kFloat32, {pn}), pd(DType::kFloat32, {pn});
  fill_uniform(pa, 5, 0, 1);
  fill_uniform(pb, 6, 0, 1);
  fill_uniform(pc, 7, 0, 1);
  const Context ctx{threads};
  Status st;
  auto op = [&] {
    st = group_normalization_grad(x.view(), dy.view(), gamma.view(), mean.view(), rstd.view(), dx.view(), ctx);
  };
  time_calls(2, op);  // warm-up
  r.op_t = summarize(time_calls(reps, op));
  r.probe_t = probe_r3w1(pa, pb, pc, pd, threads, reps);
  if (!st) r.error = st.message();
  r.bytes = 4.0 * x.bytes() + 2.0 * mean.bytes();
  r.probe_bytes = 4.0 * x.bytes();
  // A group whose three inputs do not stay in the cache between the two passes is read twice.
  const double group_bytes = 3.0 * x.bytes() / mean.numel();
  r.model_bytes = group_bytes > 1024.0 * 1024 ? 7.0 * x.bytes() : r.bytes;
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
      "GB/s: compulsory bytes per call / median time. probe: same read/write mix (PowerSign: read 3, update 2 in "
      "place; GroupNormalizationGrad: read 3, write 1, best of plain and non-temporal stores), same threads, same "
      "bytes. ratio = GB/s / probe. model: ratio counting the traffic the algorithm needs (groups larger than "
      "1 MiB are read twice: 6 reads + 1 write).\n");
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
  std::vector<std::string> ops = o.ops;
  if (ops.empty()) ops = {"group_normalization_grad", "inplace_apply_power_sign"};
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
  for (const std::string& op : ops) {
    if (op != "group_normalization_grad" && op != "inplace_apply_power_sign") {
      std::fprintf(stderr, "nnops bench: unknown operator '%s'\n", op.c_str());
      return 2;
    }
    std::vector<std::string> op_sizes = sizes;
    if (op == "group_normalization_grad" && std::find(sizes.begin(), sizes.end(), "dram") != sizes.end())
      op_sizes.push_back("dram-big");
    for (DType t : dtypes)
      for (const std::string& size : op_sizes)
        for (int th : threads) {
          results.push_back(op == "inplace_apply_power_sign" ? bench_power_sign(t, size, th, o.reps)
                                                             : bench_group_norm_grad(t, size, th, o.reps));
          if (!o.json) print_row(results.back());
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
