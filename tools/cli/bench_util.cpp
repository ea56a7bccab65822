#include "tools/cli/bench_util.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "nnops/context.hpp"
#include "src/core/check.hpp"
#include "src/core/layout.hpp"
#include "tools/cli/cli_util.hpp"

namespace nnops::cli {
namespace {

DType tensor_dtype(const ops::TensorSpec& t, const ops::ProblemSpec& s) {
  return t.dtype == ops::DtypeRule::kT || s.aux_like_t ? s.dtype : DType::kFloat32;
}

std::size_t numel_of(const std::vector<int64_t>& shape) {
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

// The probe arrays of a call, by role: reads = the main-sized tensors it reads (read-and-written ones first),
// writes = the main-sized ones it writes. Empty when they do not match the descriptor's mix.
bool map_probe(const ops::OpDesc& d, const std::vector<TensorView>& v, ProbeSet* out) {
  const ops::ProbeMix mix = d.probe;
  const TensorView& main = v[0];
  const int64_t n = main.numel();
  std::vector<void*> inout, in, outs;
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    if (v[i].data() == nullptr || v[i].numel() != n || dtype_size(v[i].dtype()) != dtype_size(main.dtype())) continue;
    switch (d.tensors[i].role) {
      case ops::Role::kInOut:
        inout.push_back(v[i].data());
        break;
      case ops::Role::kIn:
        in.push_back(v[i].data());
        break;
      case ops::Role::kOut:
        outs.push_back(v[i].data());
        break;
    }
  }
  std::vector<void*> reads = inout;
  reads.insert(reads.end(), in.begin(), in.end());
  if (static_cast<int>(reads.size()) != mix.reads) return false;
  if (mix.in_place) {
    if (static_cast<int>(inout.size()) < mix.writes) return false;
    out->arrays = reads;
  } else {
    if (static_cast<int>(outs.size()) < mix.writes || !inout.empty()) return false;
    out->arrays = reads;
    out->arrays.insert(out->arrays.end(), outs.begin(), outs.begin() + mix.writes);
  }
  // An output that is also an input would be overwritten with data that is not its own.
  if (!mix.in_place) {
    for (int k = mix.reads; k < static_cast<int>(out->arrays.size()); ++k) {
      if (std::find(reads.begin(), reads.end(), out->arrays[k]) != reads.end()) return false;
    }
  }
  out->reads = mix.reads;
  out->writes = mix.writes;
  out->in_place = mix.in_place;
  out->lanes = static_cast<std::size_t>(n) * dtype_size(main.dtype()) / 4;
  return true;
}

}  // namespace

Timing summarize(std::vector<double> v) {
  Timing t;
  if (v.empty()) return t;
  std::sort(v.begin(), v.end());
  t.median = median(v);
  t.min = v.front();
  t.max = v.back();
  return t;
}

std::vector<ops::Problem> make_problems(const std::vector<CallSpec>& specs) {
  std::vector<ops::Problem> out;
  out.reserve(specs.size());
  for (const CallSpec& c : specs) out.push_back(c.d->make_problem(c.spec));
  return out;
}

PlacedCalls place_calls(const std::vector<CallSpec>& specs, Layout layout, bool channels_last,
                        const std::vector<std::pair<int, int>>& order_in, const std::vector<ops::Problem>* problems) {
  // Sizes first (from the descriptors' shapes), so that one placement holds every tensor in order.
  std::vector<std::vector<std::vector<int64_t>>> shapes(specs.size());
  std::vector<std::vector<std::size_t>> bytes(specs.size());
  std::vector<std::vector<int>> slot(specs.size());
  for (std::size_t c = 0; c < specs.size(); ++c) {
    const ops::OpDesc& d = *specs[c].d;
    const ops::ProblemSpec& s = specs[c].spec;
    shapes[c] = d.shapes(s.shape, s.attrs.empty() ? d.attrs_for(s.shape) : s.attrs);
    for (std::size_t i = 0; i < d.tensors.size(); ++i) {
      bytes[c].push_back(numel_of(shapes[c][i]) * dtype_size(tensor_dtype(d.tensors[i], s)));
    }
    slot[c].assign(d.tensors.size(), -1);
  }
  std::vector<std::pair<int, int>> order;
  for (const auto& [c, i] : order_in) {
    if (slot[c][i] < 0) {
      slot[c][i] = static_cast<int>(order.size());
      order.push_back({c, i});
    }
  }
  for (std::size_t c = 0; c < specs.size(); ++c) {
    for (std::size_t i = 0; i < slot[c].size(); ++i) {
      if (slot[c][i] < 0) {
        slot[c][i] = static_cast<int>(order.size());
        order.push_back({static_cast<int>(c), static_cast<int>(i)});
      }
    }
  }
  std::vector<std::size_t> sizes;
  for (const auto& [c, i] : order) sizes.push_back(bytes[c][i]);
  PlacedCalls out;
  out.mem = Placement(layout, sizes);
  const int threads = resolve_num_threads(Context{});
  for (std::size_t c = 0; c < specs.size(); ++c) {
    const ops::OpDesc& d = *specs[c].d;
    ops::Problem generated;
    if (problems == nullptr) generated = d.make_problem(specs[c].spec);
    const ops::Problem& p = problems ? (*problems)[c] : generated;
    PlacedCall call;
    call.d = &d;
    call.shape = specs[c].spec.shape;
    call.attrs = p.attrs;
    call.bytes = d.bytes(p);
    call.model_bytes = d.model_bytes ? d.model_bytes(p) : call.bytes;
    call.views.assign(d.tensors.size(), TensorView{});
    for (std::size_t i = 0; i < d.tensors.size(); ++i) {
      if (!p.present[i]) continue;
      if (p.t[i].bytes() != bytes[c][i]) throw std::logic_error(std::string(d.name) + ": unexpected tensor size");
      call.footprint += static_cast<double>(bytes[c][i]);
      void* dst = out.mem.ptr(slot[c][i]);
      const std::vector<int64_t>& sh = p.t[i].shape();
      if (channels_last && sh.size() >= 3) {
        const std::vector<int64_t> st = detail::channels_last_strides(sh);
        call.views[i] = TensorView::strided(dst, p.t[i].dtype(), sh.data(), st.data(), static_cast<int>(sh.size()));
        detail::scatter_dense(p.t[i].data(), call.views[i], threads);
      } else {
        call.views[i] = TensorView::contiguous(dst, p.t[i].dtype(), sh.data(), static_cast<int>(sh.size()));
        if (p.t[i].bytes()) std::memcpy(dst, p.t[i].data(), p.t[i].bytes());
      }
      if (problems == nullptr) generated.t[i] = detail::HostBuffer();  // keep the peak at one problem
    }
    call.probe_own = map_probe(d, call.views, &call.probe);
    out.calls.push_back(std::move(call));
  }
  // Calls whose tensors do not fit their mix: separate probe arrays of the main tensor's size, placed alike.
  std::vector<std::size_t> extra;
  for (const PlacedCall& call : out.calls) {
    if (call.probe_own) continue;
    const ops::ProbeMix m = call.d->probe;
    const std::size_t b = static_cast<std::size_t>(call.views[0].numel()) * dtype_size(call.views[0].dtype());
    for (int k = 0; k < m.reads + (m.in_place ? 0 : m.writes); ++k) extra.push_back(b);
  }
  if (!extra.empty()) {
    out.probe_mem = Placement(layout, extra);
    std::size_t k = 0;
    for (PlacedCall& call : out.calls) {
      if (call.probe_own) continue;
      const ops::ProbeMix m = call.d->probe;
      call.probe = ProbeSet{};
      call.probe.reads = m.reads;
      call.probe.writes = m.writes;
      call.probe.in_place = m.in_place;
      call.probe.lanes = extra[k] / 4;
      for (int j = 0; j < m.reads + (m.in_place ? 0 : m.writes); ++j)
        call.probe.arrays.push_back(out.probe_mem.ptr(k++));
    }
  }
  return out;
}

void run_probes(const std::vector<const ProbeSet*>& sets, int threads, ProbeVariant v) {
  for (const ProbeSet* s : sets) {
    if (s->lanes == 0) continue;
    probe_mix(s->arrays.data(), s->reads, s->writes, s->in_place, s->lanes, threads, v);
  }
}

std::vector<std::pair<ProbeVariant, double>> rank_probe_variants(const std::vector<const ProbeSet*>& sets, int threads,
                                                                 int rounds, bool self_warm) {
  const int writes = sets.empty() ? 0 : sets.front()->writes;
  std::vector<ProbeVariant> vs;
  for (int k = 0; k < static_cast<int>(ProbeVariant::kCount); ++k) {
    if (probe_variant_applies(static_cast<ProbeVariant>(k), writes)) vs.push_back(static_cast<ProbeVariant>(k));
  }
  std::vector<std::vector<double>> t(vs.size());
  for (ProbeVariant v : vs) run_probes(sets, threads, v);  // warm-up
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < vs.size(); ++k) {
      if (self_warm) run_probes(sets, threads, vs[k]);
      const double t0 = now_seconds();
      run_probes(sets, threads, vs[k]);
      t[k].push_back(now_seconds() - t0);
    }
  }
  std::vector<std::pair<ProbeVariant, double>> out;
  for (std::size_t k = 0; k < vs.size(); ++k) out.push_back({vs[k], *std::min_element(t[k].begin(), t[k].end())});
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

ProbeFinalists::ProbeFinalists(std::vector<const ProbeSet*> sets, int threads,
                               const std::vector<std::pair<ProbeVariant, double>>& ranked, bool self_warm)
    : sets_(std::move(sets)), threads_(threads), self_warm_(self_warm) {
  bool seen[2] = {false, false};
  for (const auto& [v, t] : ranked) {
    bool& s = seen[probe_variant_streams(v) ? 1 : 0];
    if (!s) v_.push_back(v), s = true;
  }
  t_.resize(v_.size());
}

void ProbeFinalists::run() {
  for (std::size_t k = 0; k < v_.size(); ++k) {
    if (self_warm_) run_probes(sets_, threads_, v_[k]);
    const double t0 = now_seconds();
    run_probes(sets_, threads_, v_[k]);
    t_[k].push_back(now_seconds() - t0);
  }
}

std::size_t ProbeFinalists::best_index() const {
  std::size_t b = 0;
  double best = 0;
  for (std::size_t k = 0; k < v_.size(); ++k) {
    const double m = summarize(t_[k]).median;
    if (k == 0 || m < best) b = k, best = m;
  }
  return b;
}

ProbeVariant ProbeFinalists::best() const { return v_.empty() ? ProbeVariant::kPlain : v_[best_index()]; }

Timing ProbeFinalists::timing() const { return v_.empty() ? Timing{} : summarize(t_[best_index()]); }

bool self_warmed_timing(double bytes) { return bytes <= static_cast<double>(detail::l3_cache_bytes()); }

std::vector<double> load_average() {
  std::vector<double> l(3, 0.0);
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3) l.assign(3, 0.0);
    std::fclose(f);
  }
  return l;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string variants_json(const std::vector<std::pair<ProbeVariant, double>>& ranked, double bytes) {
  std::string s = "{";
  char buf[96];
  for (std::size_t k = 0; k < ranked.size(); ++k) {
    std::snprintf(buf, sizeof buf, "%s\"%s\": %.4g", k ? ", " : "", probe_variant_name(ranked[k].first),
                  ranked[k].second > 0 ? bytes / ranked[k].second / 1e9 : 0.0);
    s += buf;
  }
  return s + "}";
}

}  // namespace nnops::cli
