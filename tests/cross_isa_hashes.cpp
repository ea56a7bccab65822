// nnops_isa_hashes: a fixed set of operator outputs, hashed per SIMD target, for comparing results across
// targets, vector lengths and machines (docs/reliability.md, "Cross-ISA agreement"; scripts/run_arm_tests.sh
// runs it for every ARM configuration, scripts/cross_isa_report.py compares the hashes with x86's).
//
// Output, one line per operator, dtype, case set and target (every operator of the list has the set
// "generated", from its descriptor; the two older operators also have hand-made sets):
//   <op> <dtype> <set> <isa> <vector bits> raw=<hash of the output bytes> nan=<the same, every NaN counted alike>
// The inputs are built from integers with exact operations only (small sums, scaling by powers of two), so
// they are the same bits on every machine. Each case runs on 1 and on 2 threads; different bits are an
// error (exit status 1). NNOPS_TEST_ISAS (comma-separated) restricts the targets, as for the test suite.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/core/host_buffer.hpp"
#include "src/ops/op_desc.hpp"

// The vector length of the target dispatch picks (Highway 1.0.3's libhwy does not export VectorBytes).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/cross_isa_hashes.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nnops_isa_hashes {
namespace HWY_NAMESPACE {
size_t VectorBits() { return hwy::HWY_NAMESPACE::Lanes(hwy::HWY_NAMESPACE::ScalableTag<uint8_t>()) * 8; }
}  // namespace HWY_NAMESPACE
}  // namespace nnops_isa_hashes
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nnops_isa_hashes {
HWY_EXPORT(VectorBits);
}  // namespace nnops_isa_hashes

namespace {

using nnops::Context;
using nnops::DType;
using nnops::detail::HostBuffer;

// splitmix64: the same sequence everywhere.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform on the 2^-20 grid of [-1, 1): exact in double.
  double unit() { return static_cast<double>(static_cast<int64_t>(next() >> 43) - (int64_t{1} << 20)) / 1048576.0; }
  // unit() * 2^e, e uniform in [lo, hi]: exact. (Two statements: the order in which function arguments
  // are evaluated differs between compilers, here between x86-64 and aarch64 GCC.)
  double scaled(int lo, int hi) {
    const double u = unit();
    return std::ldexp(u, lo + static_cast<int>(next() % (hi - lo + 1)));
  }
};

struct Hash {
  uint64_t raw = 0xcbf29ce484222325ull, nan = 0xcbf29ce484222325ull;  // FNV-1a 64
  static void mix(uint64_t& h, const unsigned char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  }
  void add(const HostBuffer& b) {
    const size_t es = nnops::dtype_size(b.dtype());
    const auto* p = static_cast<const unsigned char*>(b.data());
    mix(raw, p, b.bytes());
    static const unsigned char kNan[8] = {'N', 'a', 'N', 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < b.numel(); ++i) mix(nan, std::isnan(b.get(i)) ? kNan : p + i * es, es);
  }
};

bool failed = false;

HostBuffer scalar(DType t, double v) {
  HostBuffer b(t, {1});
  b.set(0, v);
  return b;
}

// GroupNormalizationGrad: tails around every vector width, one-element and block-crossing groups, ranks 3
// and 5, statistics in float32 and in T, the shared-group (1 x 1 x 40001) and the whole-group (4 x 2 x
// 8200) schedules on 2 threads. Set "ordinary": data as in training. Set "cancel": dy*gamma is +2^60, -2^60
// (2^30 for float16), then an ordinary product, and so on (period 3, so that every lane of a power-of-two
// vector sees both kinds), with x = mean at the large ones: they cancel exactly in s1 and add nothing to S,
// and s1 keeps the small products only as far as the summation order (the lane count) lets them survive.
void gn_cases(DType t, bool cancel, Hash& h) {
  const std::vector<std::vector<int64_t>> shapes = {{1, 1, 1},       {1, 1, 7},         {2, 3, 16},    {2, 3, 17},
                                                    {1, 3, 1000},    {8, 8, 33},        {1, 2, 2049},  {1, 3, 4097},
                                                    {2, 4, 3, 5, 7}, {1, 2, 8, 16, 17}, {1, 1, 40001}, {4, 2, 8200}};
  const int big = t == DType::kFloat16 ? 15 : 30;  // |dy| = |gamma| = 2^big
  uint64_t seed = cancel ? 100 : 1;
  for (const auto& shape : shapes) {
    const DType st = seed % 2 ? DType::kFloat32 : t;
    Rng r{seed++};
    HostBuffer x(t, shape), dy(t, shape), gamma(t, shape), mean(st, {shape[0], shape[1]}),
        rstd(st, {shape[0], shape[1]});
    const int64_t groups = shape[0] * shape[1], m = x.numel() / groups;
    for (int64_t g = 0; g < groups; ++g) {
      const double mu = static_cast<double>(static_cast<int>(r.next() % 13) - 6) / 4;
      const double sigma = std::ldexp(1.0, static_cast<int>(r.next() % 7) - 3);
      mean.set(g, mu);
      rstd.set(g, 1 / sigma);  // a power of two: exact
      for (int64_t i = 0; i < m; ++i) {
        x.set(g * m + i, mu + 2 * sigma * r.unit());
        if (cancel && i % 3 < 2) {  // +2^(2 big), -2^(2 big), one ordinary element, ...: the big ones cancel
          const double sign = i % 3 == 0 ? 1 : -1;
          x.set(g * m + i, mu);  // x - mean = 0: S stays a sum of ordinary terms
          dy.set(g * m + i, sign * std::ldexp(1.0, big));
          gamma.set(g * m + i, std::ldexp(1.0, big));
        } else {
          dy.set(g * m + i, r.scaled(-3, 3));
          gamma.set(g * m + i, r.scaled(-2, 2));
        }
      }
    }
    HostBuffer dx1(t, shape), dx2(t, shape);
    for (auto* p : {&dx1, &dx2}) {
      const nnops::Status s = nnops::group_normalization_grad(x.view(), dy.view(), gamma.view(), mean.view(),
                                                              rstd.view(), p->view(), Context{p == &dx1 ? 1 : 2});
      if (!s) {
        std::fprintf(stderr, "nnops_isa_hashes: %s\n", s.message().c_str());
        std::exit(2);
      }
    }
    if (!dx1.same_bytes(dx2)) {
      std::fprintf(stderr, "nnops_isa_hashes: group_normalization_grad %s %s: 1 and 2 threads differ\n",
                   nnops::dtype_name(t), x.view().shape_string().c_str());
      failed = true;
    }
    h.add(dx1);
  }
}

// InplaceApplyPowerSign, three steps per case: sizes around every kernel step and the thread split (256
// elements; the two largest run on 2 threads), ordinary values (set "ordinary") or with zeros, signed zeros,
// subnormals, infinities, NaNs and values near T's overflow (set "special").
void ps_cases(DType t, bool special, Hash& h) {
  const std::vector<int64_t> sizes = {1, 3, 8, 31, 64, 255, 256, 257, 1000, 4097, 40000 + 1, 65536 + 3};
  struct Scalars {
    double lr, logbase, sign_decay, beta;
  };
  const Scalars sets[] = {{0.01, 1.0, 0.99, 0.9}, {0.5, 0.5, 1.0, 0.0}, {1.0 / 1024, 2.0, 0.5, 0.5}};
  const double big = t == DType::kFloat16 ? 60000.0 : 3.0e38;
  const double tiny = t == DType::kFloat16 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -133);
  const double specials[] = {0.0, -0.0, tiny, -tiny, big, -big, INFINITY, -INFINITY, NAN, 1.0, -1.0};
  uint64_t seed = special ? 1000 : 2000;
  for (int64_t n : sizes) {
    for (const Scalars& sc : sets) {
      Rng r{seed++};
      HostBuffer var(t, {n}), m(t, {n}), grad(t, {n});
      for (int64_t i = 0; i < n; ++i) {
        for (HostBuffer* b : {&var, &m, &grad}) {
          const uint64_t pick = r.next();
          double v = r.scaled(-4, 4);
          if (b == &grad && pick % 8 == 0) v = 0;
          if (special && pick % 5 == 0) v = specials[(pick >> 8) % (sizeof specials / sizeof specials[0])];
          b->set(i, v);
        }
      }
      const HostBuffer lr = scalar(t, sc.lr), lb = scalar(t, sc.logbase), sd = scalar(t, sc.sign_decay),
                       beta = scalar(t, sc.beta);
      HostBuffer out[2][2] = {{var.clone(), m.clone()}, {var.clone(), m.clone()}};
      for (int k = 0; k < 2; ++k) {
        for (int step = 0; step < 3; ++step) {
          const nnops::Status s =
              nnops::inplace_apply_power_sign(out[k][0].view(), out[k][1].view(), lr.view(), lb.view(), sd.view(),
                                              beta.view(), grad.view(), false, Context{k + 1});
          if (!s) {
            std::fprintf(stderr, "nnops_isa_hashes: %s\n", s.message().c_str());
            std::exit(2);
          }
        }
      }
      if (!out[0][0].same_bytes(out[1][0]) || !out[0][1].same_bytes(out[1][1])) {
        std::fprintf(stderr, "nnops_isa_hashes: inplace_apply_power_sign %s n=%lld: 1 and 2 threads differ\n",
                     nnops::dtype_name(t), static_cast<long long>(n));
        failed = true;
      }
      h.add(out[0][0]);
      h.add(out[0][1]);
    }
  }
}

// Every operator of the list (set "generated"): its descriptor's problems on its test shapes (auxiliary tensors
// in float32 and in T by turns), through the one execution path. The generators use integer hashing and
// correctly rounded double arithmetic only, so the inputs are the same bits on every machine.
void desc_cases(const nnops::ops::OpDesc& d, DType t, Hash& h) {
  uint64_t seed = 1;
  for (const auto& shape : d.test_shapes) {
    const bool aux = seed % 2 == 0;
    nnops::ops::ProblemSpec spec;
    spec.dtype = t;
    spec.shape = shape;
    spec.seed = seed++;
    spec.aux_like_t = aux;
    const nnops::ops::Problem before = d.make_problem(spec);
    nnops::ops::Problem out[2] = {before.clone(), before.clone()};
    for (int k = 0; k < 2; ++k) {
      const std::vector<nnops::TensorView> v = out[k].views();
      const nnops::Status s = nnops::ops::run_prepared(d.name, d.prepare, v.data(), out[k].attrs, Context{k + 1});
      if (!s) {
        std::fprintf(stderr, "nnops_isa_hashes: %s\n", s.message().c_str());
        std::exit(2);
      }
    }
    for (std::size_t i = 0; i < d.tensors.size(); ++i) {
      if (d.tensors[i].role == nnops::ops::Role::kIn) continue;
      if (!out[0].t[i].same_bytes(out[1].t[i])) {
        std::fprintf(stderr, "nnops_isa_hashes: %s %s %s: 1 and 2 threads differ\n", d.name, nnops::dtype_name(t),
                     d.tensors[i].name);
        failed = true;
      }
      h.add(out[0].t[i]);
    }
  }
}

}  // namespace

int main() {
  std::vector<nnops::CpuIsa> isas;
  for (const nnops::CpuIsa& isa : nnops::compiled_isas())
    if (isa.supported) isas.push_back(isa);
  if (const char* env = std::getenv("NNOPS_TEST_ISAS"); env && *env) {
    std::string list(env);
    for (char& c : list)
      if (c == ',') c = ' ';
    std::istringstream in(list);
    std::vector<nnops::CpuIsa> chosen;
    for (std::string name; in >> name;) {
      bool found = false;
      for (const nnops::CpuIsa& isa : isas)
        if (isa.name == name) chosen.push_back(isa), found = true;
      if (!found) {
        std::fprintf(stderr, "nnops_isa_hashes: NNOPS_TEST_ISAS names '%s', which this CPU cannot run\n", name.c_str());
        return 2;
      }
    }
    isas = chosen;
  }
  const DType dtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  for (const nnops::CpuIsa& isa : isas) {
    if (!nnops::force_isa_for_testing(isa.bits) || nnops::current_isa() != isa.name) {
      std::fprintf(stderr, "nnops_isa_hashes: cannot force %s\n", isa.name.c_str());
      return 2;
    }
    const unsigned bits = static_cast<unsigned>(HWY_DYNAMIC_DISPATCH(nnops_isa_hashes::VectorBits)());
    for (DType t : dtypes) {
      auto print = [&](const char* op, const char* set, const Hash& h) {
        std::printf("%s %s %s %s %u raw=%016llx nan=%016llx\n", op, nnops::dtype_name(t), set, isa.name.c_str(), bits,
                    static_cast<unsigned long long>(h.raw), static_cast<unsigned long long>(h.nan));
      };
      Hash gn, gnc, ps, pss;
      gn_cases(t, false, gn);
      print("group_normalization_grad", "ordinary", gn);
      gn_cases(t, true, gnc);
      print("group_normalization_grad", "cancel", gnc);
      ps_cases(t, false, ps);
      print("inplace_apply_power_sign", "ordinary", ps);
      ps_cases(t, true, pss);
      print("inplace_apply_power_sign", "special", pss);
      for (const nnops::ops::OpDesc* d : nnops::ops::all_ops()) {
        Hash g;
        desc_cases(*d, t, g);
        print(d->name, "generated", g);
      }
      std::fflush(stdout);
    }
  }
  (void)nnops::force_isa_for_testing(0);
  return failed ? 1 : 0;
}
#endif  // HWY_ONCE
