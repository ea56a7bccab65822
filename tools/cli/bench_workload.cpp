// `nnops bench --workload resnet50|unet`: whole-model lists of calls, each tensor its own allocation, placed
// as --layout says (docs/performance.md, "Layouts, workloads and probes").
//
// resnet50: one PowerSign optimizer step over the 161 parameter tensors of torchvision's ResNet-50
//   (25,557,032 elements), through the C++ API and through the CANN C API (phase one and a launch on one
//   stream per tensor, one synchronize at the end), against one call on a single tensor of the total size and
//   against the same-mix probe on that tensor's buffers.
// unet: GroupNorm forward and GroupNormBackward over every GroupNorm layer of Stable Diffusion 1.5's UNet
//   (batch 2, 64x64 latents, 32 groups), row-major and channels-last, against the same-mix probe run over the
//   same layers' buffers.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "nnops/nnops.hpp"
#include "src/acl/tensor.hpp"
#include "src/ops/op_desc.hpp"
#include "tools/cli/bench.hpp"
#include "tools/cli/bench_util.hpp"
#include "tools/cli/cli_util.hpp"

namespace nnops::cli::bench_detail {
namespace {

using Shape = std::vector<int64_t>;

// ---- the models ---------------------------------------------------------------------------------------------

// torchvision.models.resnet50(): named_parameters() order. conv1 and bn1; layers of 3, 4, 6, 3 Bottleneck
// blocks of widths 64, 128, 256, 512 (1x1 conv to the width, 3x3 conv, 1x1 conv to 4 x width, each followed
// by a BatchNorm with a weight and a bias; the first block of each layer also has a 1x1 downsample conv and
// its BatchNorm); fc.
std::vector<Shape> resnet50_parameters() {
  std::vector<Shape> p = {{64, 3, 7, 7}, {64}, {64}};
  int64_t in = 64;
  const int blocks[4] = {3, 4, 6, 3};
  const int64_t width[4] = {64, 128, 256, 512};
  for (int l = 0; l < 4; ++l) {
    const int64_t w = width[l];
    for (int b = 0; b < blocks[l]; ++b) {
      p.insert(p.end(), {{w, in, 1, 1}, {w}, {w}, {w, w, 3, 3}, {w}, {w}, {4 * w, w, 1, 1}, {4 * w}, {4 * w}});
      if (b == 0) p.insert(p.end(), {{4 * w, in, 1, 1}, {4 * w}, {4 * w}});
      in = 4 * w;
    }
  }
  p.insert(p.end(), {{1000, 2048}, {1000}});
  return p;
}

struct GnLayer {
  int64_t c, res;
  double eps;
};

// Stable Diffusion 1.5's UNet (diffusers UNet2DConditionModel: block_out_channels 320, 640, 1280, 1280,
// layers_per_block 2, norm_num_groups 32), in forward order: every ResnetBlock2D has norm1 on its input
// channels and norm2 on its output channels (eps 1e-5); every Transformer2DModel one GroupNorm on its
// channels (eps 1e-6). Down blocks 0-2 have attention and a downsampler, block 3 neither; the mid block is
// resnet, attention, resnet; up block 0 has no attention, each up block has 3 resnets whose input is the
// previous output concatenated with a skip connection (popped from the down path's outputs: conv_in, every
// down resnet/attention, every downsampler), and up blocks 0-2 end in an upsampler; then conv_norm_out. Our
// derivation from the architecture (the shapes of a 512x512 image at batch 2, as classifier-free guidance
// runs it), not a trace.
std::vector<GnLayer> unet_groupnorms() {
  std::vector<GnLayer> g;
  const int64_t ch[4] = {320, 640, 1280, 1280};
  int64_t res = 64, in = 320;
  std::vector<int64_t> skips = {320};  // conv_in
  for (int b = 0; b < 4; ++b) {
    for (int l = 0; l < 2; ++l) {
      g.push_back({in, res, 1e-5});
      g.push_back({ch[b], res, 1e-5});
      if (b < 3) g.push_back({ch[b], res, 1e-6});
      in = ch[b];
      skips.push_back(in);
    }
    if (b < 3) {
      res /= 2;
      skips.push_back(in);
    }
  }
  g.insert(g.end(), {{1280, res, 1e-5}, {1280, res, 1e-5}, {1280, res, 1e-6}, {1280, res, 1e-5}, {1280, res, 1e-5}});
  int64_t prev = 1280;
  for (int b = 0; b < 4; ++b) {
    const int64_t out = ch[3 - b];
    for (int l = 0; l < 3; ++l) {
      const int64_t skip = skips.back();
      skips.pop_back();
      g.push_back({prev + skip, res, 1e-5});
      g.push_back({out, res, 1e-5});
      if (b > 0) g.push_back({out, res, 1e-6});
      prev = out;
    }
    if (b < 3) res *= 2;
  }
  g.push_back({320, 64, 1e-5});  // conv_norm_out
  return g;
}

// ---- output ---------------------------------------------------------------------------------------------------

struct Row {
  std::string workload, dtype, layout, format, api, what;
  int threads = 1, calls = 0;
  Timing t;
  double bytes = 0;
  double probe_gbps = 0, probe_lo = 0, probe_hi = 0;
  std::string probe_variant;
  double vs_one = 0;  // time / one call on the total size (resnet50)
  std::string error;
  double gbps() const { return bytes / t.median / 1e9; }
};

void print_header(bool resnet) {
  std::printf("%-9s %-8s %-8s %-13s %3s %-4s %-22s %5s %9s %19s %6s %6s %9s %-9s %5s%s\n", "workload", "dtype",
              "layout", "format", "thr", "api", "calls", "n", "median", "spread (min..max)", "GB/s", "probe", "range",
              "variant", "ratio", resnet ? "  vs one call" : "");
}

void print_row(const Row& r, bool resnet) {
  if (!r.error.empty()) {
    std::printf("%-9s %-8s %-8s ERROR: %s\n", r.workload.c_str(), r.dtype.c_str(), r.layout.c_str(), r.error.c_str());
    return;
  }
  const std::string spread = format_time(r.t.min) + ".." + format_time(r.t.max);
  char range[32], vs[32] = "";
  std::snprintf(range, sizeof range, "%.0f..%.0f", r.probe_lo, r.probe_hi);
  if (resnet && r.vs_one > 0) std::snprintf(vs, sizeof vs, "  %11.2f", r.vs_one);
  std::printf("%-9s %-8s %-8s %-13s %3d %-4s %-22s %5d %9s %19s %6.1f %6.1f %9s %-9s %5.2f%s\n", r.workload.c_str(),
              r.dtype.c_str(), r.layout.c_str(), r.format.c_str(), r.threads, r.api.c_str(), r.what.c_str(), r.calls,
              format_time(r.t.median).c_str(), spread.c_str(), r.gbps(), r.probe_gbps, range, r.probe_variant.c_str(),
              r.gbps() / r.probe_gbps, vs);
  std::fflush(stdout);
}

std::string row_json(const Row& r) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"workload\": \"%s\", \"dtype\": \"%s\", \"layout\": \"%s\", \"format\": \"%s\", \"api\": \"%s\", "
                "\"what\": \"%s\", \"threads\": %d, \"calls\": %d, \"median_s\": %.9g, \"min_s\": %.9g, "
                "\"max_s\": %.9g, \"bytes\": %.0f, \"gbps\": %.4g, \"probe_gbps\": %.4g, \"probe_min_gbps\": %.4g, "
                "\"probe_max_gbps\": %.4g, \"probe_variant\": \"%s\", \"ratio\": %.4g, \"vs_one_call\": %.4g, "
                "\"error\": ",
                r.workload.c_str(), r.dtype.c_str(), r.layout.c_str(), r.format.c_str(), r.api.c_str(), r.what.c_str(),
                r.threads, r.calls, r.t.median, r.t.min, r.t.max, r.bytes, r.gbps(), r.probe_gbps, r.probe_lo,
                r.probe_hi, r.probe_variant.c_str(), r.gbps() / r.probe_gbps, r.vs_one);
  return std::string(buf) + json_string(r.error) + "}";
}

struct ProbeStats {
  Timing t;
  std::string variant;
  double bytes = 0;
};

void set_probe(Row* r, const ProbeStats& p) {
  r->probe_gbps = p.bytes / p.t.median / 1e9;
  r->probe_lo = p.bytes / p.t.max / 1e9;
  r->probe_hi = p.bytes / p.t.min / 1e9;
  r->probe_variant = p.variant;
}

double timed(const std::function<void()>& f) {
  const double t0 = now_seconds();
  f();
  return now_seconds() - t0;
}

// ---- the C API --------------------------------------------------------------------------------------------

std::string recent_error() {
  const char* m = aclGetRecentErrMsg();
  return m ? m : "";
}

// aclInit/aclrtSetDevice for the process's first C API workload; never finalized (the runtime lives until exit).
bool acl_up(std::string* err) {
  static int state = 0;  // 0 not yet, 1 up, 2 failed
  if (state == 0) {
    const aclError e = aclInit(nullptr);
    state = (e == ACL_SUCCESS || e == ACL_ERROR_REPEAT_INITIALIZE) && aclrtSetDevice(0) == ACL_SUCCESS ? 1 : 2;
    if (state == 2) *err = "aclInit/aclrtSetDevice failed: " + recent_error();
  }
  return state == 1;
}

// aclTensors over the placed calls' host memory (ordinary memory: the C API accepts it unchecked), and the
// generic AclCall of each call.
class AclCalls {
 public:
  explicit AclCalls(const std::vector<const PlacedCall*>& calls) {
    for (const PlacedCall* c : calls) {
      ops::AclCall a;
      std::vector<std::vector<int64_t>> shapes;
      for (const TensorView& v : c->views) {
        shapes.emplace_back(v.shape(), v.shape() + v.rank());
        if (v.data() == nullptr) {
          a.t.push_back(nullptr);
          continue;
        }
        std::vector<int64_t> st(v.strides(), v.strides() + v.rank());
        aclTensor* t = aclCreateTensor(v.shape(), v.rank(), acl::to_acl_dtype(v.dtype()), st.data(), 0, ACL_FORMAT_ND,
                                       v.shape(), v.rank(), v.data());
        if (t == nullptr) throw std::runtime_error("aclCreateTensor: " + recent_error());
        tensors_.push_back(t);
        a.t.push_back(t);
      }
      c->d->acl->defaults(shapes, c->attrs, &a);
      acl_.push_back(std::move(a));
      bindings_.push_back(c->d->acl);
    }
  }
  ~AclCalls() {
    for (aclTensor* t : tensors_) aclDestroyTensor(t);
  }
  AclCalls(const AclCalls&) = delete;
  AclCalls& operator=(const AclCalls&) = delete;

  /// Phase one and a launch on `stream` for each call, then one synchronize. Empty string on success.
  std::string step(aclrtStream stream) {
    for (std::size_t k = 0; k < acl_.size(); ++k) {
      uint64_t ws = 0;
      aclOpExecutor* e = nullptr;
      if (bindings_[k]->phase_one(acl_[k], &ws, &e) != ACLNN_SUCCESS) return "phase one: " + recent_error();
      if (ws > workspace_.size()) workspace_.resize(ws + 64);  // grows on the warm-up step only
      void* w = ws ? workspace_.data() + (64 - reinterpret_cast<uintptr_t>(workspace_.data()) % 64) % 64 : nullptr;
      if (bindings_[k]->phase_two(w, ws, e, stream) != ACLNN_SUCCESS) {
        const std::string why = recent_error();
        aclDestroyAclOpExecutor(e);
        return "launch: " + why;
      }
    }
    if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) return "synchronize: " + recent_error();
    return "";
  }

 private:
  std::vector<aclTensor*> tensors_;
  std::vector<ops::AclCall> acl_;
  std::vector<const ops::AclBinding*> bindings_;
  std::vector<unsigned char> workspace_;
};

// NNOPS_NUM_THREADS for the scope: the C API plans with the default Context.
class ScopedThreadsEnv {
 public:
  explicit ScopedThreadsEnv(int n) {
    if (const char* v = std::getenv("NNOPS_NUM_THREADS")) {
      had_ = true;
      old_ = v;
    }
    setenv("NNOPS_NUM_THREADS", std::to_string(n).c_str(), 1);
  }
  ~ScopedThreadsEnv() {
    if (had_) {
      setenv("NNOPS_NUM_THREADS", old_.c_str(), 1);
    } else {
      unsetenv("NNOPS_NUM_THREADS");
    }
  }

 private:
  bool had_ = false;
  std::string old_;
};

// ---- resnet50 ---------------------------------------------------------------------------------------------

// The 161 calls of a step and the one call on the total size, with their problems (made once per dtype).
struct ResnetProblems {
  std::vector<CallSpec> list, one;
  std::vector<ops::Problem> list_p, one_p;
};

ResnetProblems resnet50_problems(DType t) {
  const ops::OpDesc& d = *ops::find_op("inplace_apply_power_sign");
  const std::vector<Shape> params = resnet50_parameters();
  int64_t total = 0;
  ResnetProblems r;
  for (std::size_t i = 0; i < params.size(); ++i) {
    ops::ProblemSpec s;
    s.dtype = t;
    s.shape = params[i];
    s.seed = 1 + i;
    int64_t n = 1;
    for (int64_t x : params[i]) n *= x;
    total += n;
    r.list.push_back({&d, s});
  }
  if (params.size() != 161 || total != 25557032) throw std::logic_error("resnet50: wrong parameter list");
  ops::ProblemSpec one;
  one.dtype = t;
  one.shape = {total};
  one.seed = 1000;
  r.one.push_back({&d, one});
  r.list_p = make_problems(r.list);
  r.one_p = make_problems(r.one);
  return r;
}

bool resnet50_case(DType t, Layout layout, const ResnetProblems& rp, const WorkloadArgs& a,
                   std::vector<std::string>* json) {
  // Allocation order of a first PyTorch training step: the parameters (model construction), the gradients
  // (backward: the last layer's first), the optimizer's momentum (first step, parameter order). Tensors:
  // var 0, m 1, grad 6.
  const int n = static_cast<int>(rp.list.size());
  std::vector<std::pair<int, int>> order;
  for (int i = 0; i < n; ++i) order.push_back({i, 0});
  for (int i = n - 1; i >= 0; --i) order.push_back({i, 6});
  for (int i = 0; i < n; ++i) order.push_back({i, 1});
  const PlacedCalls list = place_calls(rp.list, layout, false, order, &rp.list_p);
  const PlacedCalls single = place_calls(rp.one, layout, false, {{0, 0}, {0, 6}, {0, 1}}, &rp.one_p);
  const PlacedCall& big = single.calls.front();
  double bytes = 0;
  for (const PlacedCall& c : list.calls) bytes += c.bytes;

  std::vector<const PlacedCall*> list_ptrs;
  for (const PlacedCall& c : list.calls) list_ptrs.push_back(&c);
  std::string acl_err;
  const bool acl_ok = acl_up(&acl_err);
  bool ok = acl_ok;
  for (int th : a.threads) {
    const Context ctx{th};
    Status st;
    std::string err;
    auto cpp_list = [&] {
      for (const PlacedCall& c : list.calls) {
        const Status s = c.run(ctx);
        if (!s) st = s;
      }
    };
    auto cpp_one = [&] {
      const Status s = big.run(ctx);
      if (!s) st = s;
    };
    const std::vector<const ProbeSet*> probe_sets{&big.probe};
    // C++ API: the list, one call on the total size and the probe, alternately.
    cpp_list();
    cpp_one();
    ProbeFinalists finalists(probe_sets, th, rank_probe_variants(probe_sets, th));
    std::vector<double> tl, t1;
    for (int r = 0; r < a.reps; ++r) {
      tl.push_back(timed(cpp_list));
      t1.push_back(timed(cpp_one));
      finalists.run();
    }
    ProbeStats probe{finalists.timing(), probe_variant_name(finalists.best()), big.probe.bytes()};
    Row base;
    base.workload = "resnet50";
    base.dtype = dtype_name(t);
    base.layout = layout_name(layout);
    base.format = "row-major";
    base.threads = th;
    set_probe(&base, probe);
    Row rl = base, r1 = base;
    rl.api = r1.api = "C++";
    rl.what = "161 parameters";
    rl.calls = n;
    rl.t = summarize(tl);
    rl.bytes = bytes;
    r1.what = "one call, total size";
    r1.calls = 1;
    r1.t = summarize(t1);
    r1.bytes = big.bytes;
    rl.vs_one = rl.t.median / r1.t.median;
    r1.vs_one = 1;
    if (!st) rl.error = r1.error = st.message();
    std::vector<Row> rows = {rl, r1};
    // C API with a stream: a block of its own after the C++ one (the C++ calls' OpenMP threads would
    // otherwise still be spinning on the two cores while the stream's thread runs).
    Row cl = base, c1 = base;
    cl.api = c1.api = "C";
    cl.what = rl.what;
    c1.what = r1.what;
    cl.calls = n;
    c1.calls = 1;
    cl.bytes = bytes;
    c1.bytes = big.bytes;
    if (acl_ok) {
      usleep(20000);
      ScopedThreadsEnv env(th);
      aclrtStream stream = nullptr;
      if (aclrtCreateStream(&stream) != ACL_SUCCESS) {
        err = "aclrtCreateStream: " + recent_error();
      } else {
        AclCalls acl_list(list_ptrs);
        AclCalls acl_one({&big});
        std::vector<double> cl_t, c1_t;
        for (int r = 0; r < a.reps + 1 && err.empty(); ++r) {
          double t0 = now_seconds();
          err = acl_list.step(stream);
          if (r > 0) cl_t.push_back(now_seconds() - t0);
          if (!err.empty()) break;
          t0 = now_seconds();
          err = acl_one.step(stream);
          if (r > 0) c1_t.push_back(now_seconds() - t0);
        }
        aclrtDestroyStream(stream);
        cl.t = summarize(cl_t);
        c1.t = summarize(c1_t);
        if (err.empty()) {
          cl.vs_one = cl.t.median / c1.t.median;
          c1.vs_one = 1;
        }
      }
    } else {
      err = acl_err;
    }
    if (!err.empty()) {
      cl.error = c1.error = err;
      ok = false;
    }
    rows.push_back(cl);
    rows.push_back(c1);
    for (const Row& r : rows) {
      if (!a.json) print_row(r, true);
      json->push_back(row_json(r));
      if (!r.error.empty()) ok = false;
    }
  }
  return ok;
}

// ---- unet ------------------------------------------------------------------------------------------------------

std::vector<CallSpec> unet_specs(DType t) {
  const ops::OpDesc& fwd = *ops::find_op("group_norm");
  const ops::OpDesc& bwd = *ops::find_op("group_norm_backward");
  const std::vector<GnLayer> layers = unet_groupnorms();
  std::vector<CallSpec> specs;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    ops::ProblemSpec s;
    s.dtype = t;
    s.shape = {2, layers[i].c, layers[i].res, layers[i].res};
    s.seed = 1 + i;
    s.attrs = fwd.attrs_for(s.shape);
    for (std::size_t k = 0; k < fwd.attrs.size(); ++k) {
      if (std::string(fwd.attrs[k].name) == "eps") s.attrs[k].f = layers[i].eps;  // and num_groups 32
    }
    specs.push_back({&fwd, s});
  }
  for (std::size_t k = layers.size(); k-- > 0;) {  // backward: last layer first
    ops::ProblemSpec s;
    s.dtype = t;
    s.shape = {2, layers[k].c, layers[k].res, layers[k].res};
    s.seed = 1000 + k;
    s.attrs = bwd.attrs_for(s.shape);
    specs.push_back({&bwd, s});
  }
  return specs;
}

bool unet_case(DType t, Layout layout, bool channels_last, const std::vector<CallSpec>& specs,
               const std::vector<ops::Problem>& problems, const WorkloadArgs& a, std::vector<std::string>* json) {
  const PlacedCalls pc = place_calls(specs, layout, channels_last, {}, &problems);
  const std::size_t nl = specs.size() / 2;
  bool ok = true;
  for (int th : a.threads) {
    const Context ctx{th};
    for (int pass = 0; pass < 2; ++pass) {
      const std::size_t lo = pass == 0 ? 0 : nl, hi = lo + nl;
      Status st;
      double bytes = 0;
      std::vector<const ProbeSet*> sets;
      for (std::size_t k = lo; k < hi; ++k) {
        bytes += pc.calls[k].bytes;
        sets.push_back(&pc.calls[k].probe);
      }
      auto sweep = [&] {
        for (std::size_t k = lo; k < hi; ++k) {
          const Status s = pc.calls[k].run(ctx);
          if (!s) st = s;
        }
      };
      sweep();
      ProbeFinalists finalists(sets, th, rank_probe_variants(sets, th));
      std::vector<double> to;
      for (int r = 0; r < a.reps; ++r) {
        to.push_back(timed(sweep));
        finalists.run();
      }
      double pbytes = 0;
      for (const ProbeSet* s : sets) pbytes += s->bytes();
      Row r;
      r.workload = "unet";
      r.dtype = dtype_name(t);
      r.layout = layout_name(layout);
      r.format = channels_last ? "channels-last" : "row-major";
      r.threads = th;
      r.api = "C++";
      r.what = pass == 0 ? "GroupNorm forward" : "GroupNormBackward";
      r.calls = static_cast<int>(nl);
      r.t = summarize(to);
      r.bytes = bytes;
      set_probe(&r, ProbeStats{finalists.timing(), probe_variant_name(finalists.best()), pbytes});
      if (!st) {
        r.error = st.message();
        ok = false;
      }
      if (!a.json) print_row(r, false);
      json->push_back(row_json(r));
    }
  }
  return ok;
}

}  // namespace

bool run_resnet50(const WorkloadArgs& a, std::vector<std::string>* json) {
  if (!a.json) {
    std::printf(
        "resnet50: one PowerSign step over torchvision ResNet-50's 161 parameters (25557032 elements); "
        "probe and 'vs one call': one call on a single tensor of the total size\n");
    print_header(true);
  }
  bool ok = true;
  for (int t : a.dtypes) {
    const ResnetProblems rp = resnet50_problems(static_cast<DType>(t));
    for (int l : a.layouts) ok = resnet50_case(static_cast<DType>(t), static_cast<Layout>(l), rp, a, json) && ok;
  }
  if (!a.json) {
    std::printf(
        "GB/s: compulsory bytes / median time. ratio = GB/s / probe (the same-mix probe on the total-size "
        "call's buffers). vs one call: median time / the same API's one call on the total size. C: phase "
        "one and a launch on one stream per tensor, one aclrtSynchronizeStream per step.\n\n");
  }
  return ok;
}

bool run_unet(const WorkloadArgs& a, std::vector<std::string>* json) {
  if (!a.json) {
    std::map<std::pair<int64_t, int64_t>, int> count;
    for (const GnLayer& g : unet_groupnorms()) ++count[{-g.res, g.c}];
    std::printf("unet: Stable Diffusion 1.5 UNet GroupNorm layers (32 groups), batch 2:");
    for (const auto& [k, c] : count)
      std::printf(" [2, %lld, %lld, %lld] x%d", static_cast<long long>(k.second), static_cast<long long>(-k.first),
                  static_cast<long long>(-k.first), c);
    std::printf("\n");
    print_header(false);
  }
  bool ok = true;
  for (int t : a.dtypes) {
    const std::vector<CallSpec> specs = unet_specs(static_cast<DType>(t));
    const std::vector<ops::Problem> problems = make_problems(specs);
    for (int l : a.layouts) {
      for (bool cl : {false, true}) {
        ok = unet_case(static_cast<DType>(t), static_cast<Layout>(l), cl, specs, problems, a, json) && ok;
      }
    }
  }
  if (!a.json) {
    std::printf(
        "GB/s: compulsory bytes of all calls / median time of the whole list. ratio = GB/s / probe (the "
        "same-mix probe run over the same layers' buffers: forward read 1 write 1, backward read 2 write "
        "1).\n\n");
  }
  return ok;
}

}  // namespace nnops::cli::bench_detail
