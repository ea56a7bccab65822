// Thread safety (issue 6, item 5), written to be run under ThreadSanitizer (preset tsan) as well as in
// the normal suite:
//   - calls on different tensors from many threads at once give the same bits as the same calls made one
//     after another (C++ API, both operators, all dtypes, with and without OpenMP threads inside);
//   - use_locking serializes updates of the same var, through the C++ API and through the C API on the
//     null stream and on several streams at once;
//   - streams survive many producers: threads that enqueue on shared streams, create and destroy their
//     own, synchronize concurrently, allocate and free device memory, and read their own error messages.
// Sizes are small enough for TSan (5-15x slower) and large enough that the OpenMP paths run (the plans go
// parallel from 2^15 elements for GroupNormalizationGrad and 2^14 per thread for PowerSign).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "aclnn_group_normalization_grad.h"
#include "aclnn_inplace_apply_power_sign.h"
#include "nnops/nnops.hpp"
#include "src/acl/error.hpp"
#include "src/acl/executor.hpp"
#include "src/core/host_buffer.hpp"
#include "src/ops/op_desc.hpp"
#include "tests/acl/acl_test_util.hpp"
#include "tests/test_util.hpp"

namespace nnops {
namespace {

using detail::HostBuffer;
constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// One PowerSign problem; run() applies one step.
struct PsCase {
  HostBuffer var, m, grad, lr, logbase, sign_decay, beta;
  PsCase(DType t, std::vector<int64_t> shape, uint64_t seed)
      : var(t, shape), m(t, shape), grad(t, shape), lr(t, {}), logbase(t, {}), sign_decay(t, {}), beta(t, {}) {
    std::mt19937_64 rng(seed);
    testing::fill_random(var, rng);
    testing::fill_random(m, rng, -1, 0);
    testing::fill_random(grad, rng, -1, 0);
    lr.set(0, 0.01);
    logbase.set(0, 0.69);
    sign_decay.set(0, 0.99);
    beta.set(0, 0.9);
  }
  Status run(bool use_locking, const Context& ctx) {
    return inplace_apply_power_sign(var.view(), m.view(), lr.view(), logbase.view(), sign_decay.view(), beta.view(),
                                    grad.view(), use_locking, ctx);
  }
};

// Runs body(worker) on n threads at once (released together) and joins them.
template <class F>
void on_threads(int n, F body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int w = 0; w < n; ++w) {
    ts.emplace_back([&, w] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      body(w);
    });
  }
  for (std::thread& t : ts) t.join();
}

TEST(ConcurrencyCpp, ManyThreadsOnDifferentTensorsGiveTheSerialBits) {
  // 8 workers per operator of the descriptor list, each with its own problems (dtype, shape and inner thread
  // count vary by worker), 3 rounds each. The serial pass computes every expected result first.
  constexpr int kWorkers = 8, kRounds = 3;
  for (const ops::OpDesc* d : ops::all_ops()) {
    SCOPED_TRACE(d->name);
    struct Work {
      ops::Problem p, want;
      Context ctx;
    };
    std::vector<Work> work(kWorkers);
    auto run = [&](ops::Problem& p, const Context& ctx) {
      const std::vector<TensorView> v = p.views();
      return ops::run_prepared(d->name, d->prepare, v.data(), p.attrs, ctx);
    };
    for (int w = 0; w < kWorkers; ++w) {
      // Small and l2-sized shapes: single-thread and parallel plans.
      const DType t = kDtypes[w % 3];
      const std::vector<int64_t> shape =
          (w % 2) ? d->bench_cases(t)[0].shape : d->test_shapes[w % d->test_shapes.size()];
      ops::ProblemSpec spec;
      spec.dtype = t;
      spec.shape = shape;
      spec.seed = 100 + w;
      spec.attrs = d->attrs_for(shape);
      work[w].p = d->make_problem(spec);
      work[w].ctx = Context{1 + w % 3};
      // Serial reference: the same calls, one thread, one after another (in-place operators step kRounds times).
      work[w].want = work[w].p.clone();
      for (int r = 0; r < kRounds; ++r) ASSERT_TRUE(run(work[w].want, Context{1}).is_ok());
    }
    std::vector<int> failures(kWorkers, 0);
    on_threads(kWorkers, [&](int w) {
      for (int r = 0; r < kRounds; ++r) failures[w] += run(work[w].p, work[w].ctx).is_ok() ? 0 : 1;
    });
    for (int w = 0; w < kWorkers; ++w) {
      SCOPED_TRACE("worker " + std::to_string(w));
      EXPECT_EQ(failures[w], 0);
      for (std::size_t i = 0; i < d->tensors.size(); ++i) {
        if (d->tensors[i].role != ops::Role::kIn) {
          EXPECT_TRUE(work[w].p.t[i].same_bytes(work[w].want.t[i]));
        }
      }
    }
  }
}

TEST(ConcurrencyCpp, UseLockingSerializesUpdatesOfOneVar) {
  // Every call is the same step f (same grad, same scalars), so any serial order gives f^K; a lost update
  // (two calls reading the same old var) leaves fewer than K steps applied. Mixed inner thread counts make
  // the calls overlap in time for as long as possible.
  constexpr int kWorkers = 6, kCalls = 5;
  for (DType t : kDtypes) {
    SCOPED_TRACE(dtype_name(t));
    PsCase shared(t, {20000}, 7), serial(t, {20000}, 7);
    for (int c = 0; c < kWorkers * kCalls; ++c) ASSERT_TRUE(serial.run(true, Context{1}).is_ok());
    std::vector<int> failures(kWorkers, 0);
    on_threads(kWorkers, [&](int w) {
      for (int c = 0; c < kCalls; ++c) failures[w] += shared.run(true, Context{1 + w % 2}).is_ok() ? 0 : 1;
    });
    for (int f : failures) EXPECT_EQ(f, 0);
    EXPECT_TRUE(shared.var.same_bytes(serial.var));
    EXPECT_TRUE(shared.m.same_bytes(serial.m));
  }
}

// ---- C API ---------------------------------------------------------------------------------------

using acl_test::AclTest;
using acl_test::DevTensor;
using acl_test::recent_error;
using ConcurrencyAcl = AclTest;

// A PowerSign problem in device memory (its own blocks), built from a PsCase's initial values.
struct DevPs {
  DevTensor var, m, grad, lr, logbase, sign_decay, beta;
  explicit DevPs(const PsCase& c)
      : var(c.var), m(c.m), grad(c.grad), lr(c.lr), logbase(c.logbase), sign_decay(c.sign_decay), beta(c.beta) {}
  aclnnStatus launch(bool use_locking, aclrtStream stream) {
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    aclnnStatus st =
        aclnnInplaceApplyPowerSignGetWorkspaceSize(var, m, lr, logbase, sign_decay, beta, grad, use_locking, &ws, &e);
    if (st != ACLNN_SUCCESS) return st;
    st = aclnnInplaceApplyPowerSign(nullptr, ws, e, stream);
    if (st != ACLNN_SUCCESS) {
      // A refused launch leaves the executor to the caller. (NB: when the stream is destroyed between the
      // launch's checks and its enqueue, the executor is already consumed and this destroy is refused.)
      const std::string why = recent_error();
      aclDestroyAclOpExecutor(e);
      recent_error();
      acl::push_error(why);  // keep the launch's message for the caller
    }
    return st;
  }
};

TEST_F(ConcurrencyAcl, UseLockingSerializesUpdatesAcrossStreamsAndThreads) {
  // One var, updated by 4 threads on the null stream and by 3 streams (each fed by its own thread) at once.
  constexpr int kThreads = 4, kStreams = 3, kCalls = 4;
  const PsCase init(DType::kFloat32, {20000}, 11);
  PsCase serial(DType::kFloat32, {20000}, 11);
  for (int c = 0; c < (kThreads + kStreams) * kCalls; ++c) ASSERT_TRUE(serial.run(true, Context{1}).is_ok());
  DevPs d(init);
  std::vector<aclrtStream> streams(kStreams);
  for (aclrtStream& s : streams) ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS) << recent_error();
  std::vector<int> failures(kThreads + kStreams, 0);
  on_threads(kThreads + kStreams, [&](int w) {
    aclrtStream s = w < kThreads ? nullptr : streams[w - kThreads];
    for (int c = 0; c < kCalls; ++c) failures[w] += d.launch(true, s) == ACLNN_SUCCESS ? 0 : 1;
    if (s != nullptr) failures[w] += aclrtSynchronizeStream(s) == ACL_SUCCESS ? 0 : 1;
    if (failures[w]) ADD_FAILURE() << recent_error();
  });
  for (int f : failures) EXPECT_EQ(f, 0);
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
  EXPECT_EQ(d.var.read(), acl_test::host_bytes(serial.var));
  EXPECT_EQ(d.m.read(), acl_test::host_bytes(serial.m));
  for (aclrtStream s : streams) EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(ConcurrencyAcl, StressStreamsSurviveManyProducers) {
  // 8 producer threads. Each owns one PowerSign problem and applies kSteps steps to it, launching on a
  // stream shared by all producers (two of them), or on a stream of its own that it creates and destroys
  // mid-way. Meanwhile each producer allocates, fills and frees scratch device memory, synchronizes the
  // shared streams (other producers' tasks included) and checks that error messages stay per-thread.
  // Tasks of one producer on one stream run in order; that producer's final var must be its serial result.
  constexpr int kProducers = 8, kSteps = 12;
  std::vector<std::unique_ptr<PsCase>> want;
  std::vector<std::unique_ptr<DevPs>> dev;
  for (int p = 0; p < kProducers; ++p) {
    const DType t = kDtypes[p % 3];
    const PsCase init(t, {1000 + 97 * p}, 300 + p);
    dev.push_back(std::make_unique<DevPs>(init));
    want.push_back(std::make_unique<PsCase>(t, std::vector<int64_t>{1000 + 97 * p}, 300 + p));
    for (int s = 0; s < kSteps; ++s) ASSERT_TRUE(want[p]->run(false, Context{1}).is_ok());
  }
  aclrtStream shared[2];
  for (aclrtStream& s : shared) ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS) << recent_error();
  std::vector<std::string> errors(kProducers);
  on_threads(kProducers, [&](int p) {
    auto fail = [&](const std::string& what) {
      if (errors[p].empty()) errors[p] = what + ": " + recent_error();
    };
    // A producer's steps must stay on one stream at a time (streams are in order; different streams are
    // not): it synchronizes before switching.
    aclrtStream own = nullptr;
    for (int s = 0; s < kSteps; ++s) {
      aclrtStream target = shared[p % 2];
      if (p % 4 == 3 && s >= kSteps / 3 && s < 2 * kSteps / 3) {
        if (own == nullptr) {
          if (aclrtSynchronizeStream(shared[p % 2]) != ACL_SUCCESS) fail("sync before own");
          if (aclrtCreateStream(&own) != ACL_SUCCESS) fail("create");
        }
        target = own;
      } else if (own != nullptr) {
        if (aclrtDestroyStream(own) != ACL_SUCCESS) fail("destroy own");  // waits for its tasks
        own = nullptr;
      }
      if (dev[p]->launch(false, target) != ACLNN_SUCCESS) fail("launch");
      void* scratch = nullptr;
      if (aclrtMalloc(&scratch, 256 + 64 * p, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) fail("malloc");
      if (aclrtMemset(scratch, 256 + 64 * p, p, 256 + 64 * p) != ACL_SUCCESS) fail("memset");
      if (aclrtFree(scratch) != ACL_SUCCESS) fail("free");
      if (s % 4 == 1 && aclrtSynchronizeStream(shared[(p + 1) % 2]) != ACL_SUCCESS) fail("sync other");
      // An error of this thread is seen by this thread only, and read once.
      if (aclrtFree(nullptr) == ACL_SUCCESS) fail("free(null) succeeded");
      const std::string msg = recent_error();
      if (msg.find("aclrtFree") == std::string::npos || msg.find('\n') != std::string::npos) {
        fail("per-thread message [" + msg + "]");
      }
    }
    if (own != nullptr && aclrtDestroyStream(own) != ACL_SUCCESS) fail("destroy own at end");
    if (aclrtSynchronizeStream(shared[p % 2]) != ACL_SUCCESS) fail("final sync");
  });
  for (int p = 0; p < kProducers; ++p) EXPECT_EQ(errors[p], "") << "producer " << p;
  for (aclrtStream s : shared) EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS) << recent_error();
  for (int p = 0; p < kProducers; ++p) {
    SCOPED_TRACE("producer " + std::to_string(p));
    EXPECT_EQ(dev[p]->var.read(), acl_test::host_bytes(want[p]->var));
    EXPECT_EQ(dev[p]->m.read(), acl_test::host_bytes(want[p]->m));
  }
  EXPECT_EQ(acl::live_executors(), 0u);
}

TEST_F(ConcurrencyAcl, StressStreamDestroyedWhileProducersLaunch) {
  // 4 producers launch steps on one stream while the main thread destroys it. Each launch either is
  // accepted, and then runs before aclrtDestroyStream returns (destroy drains the queue), or is refused
  // with an error; nothing crashes and no accepted step is lost. So each producer's var is its serial
  // result after exactly the number of accepted launches.
  constexpr int kProducers = 4, kMaxSteps = 40;
  std::vector<std::unique_ptr<DevPs>> dev;
  for (int p = 0; p < kProducers; ++p) dev.push_back(std::make_unique<DevPs>(PsCase(kDtypes[p % 3], {300}, 40 + p)));
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  std::vector<int> accepted(kProducers, 0), unexpected(kProducers, 0);
  std::atomic<int> launched{0};
  on_threads(kProducers + 1, [&](int w) {
    if (w == kProducers) {  // the destroyer
      while (launched.load() < kProducers * 3) std::this_thread::yield();
      if (aclrtDestroyStream(s) != ACL_SUCCESS) ADD_FAILURE() << recent_error();
      return;
    }
    for (int i = 0; i < kMaxSteps; ++i) {
      const aclnnStatus st = dev[w]->launch(false, s);
      launched.fetch_add(1);
      if (st == ACLNN_SUCCESS) {
        ++accepted[w];
      } else {
        const std::string msg = recent_error();
        // Refused: the stream is gone (or going): "not a live stream" or "destroyed while the task was
        // being launched".
        if (msg.find("stream") == std::string::npos) ++unexpected[w];
      }
    }
  });
  for (int p = 0; p < kProducers; ++p) {
    SCOPED_TRACE("producer " + std::to_string(p));
    EXPECT_EQ(unexpected[p], 0);
    PsCase want(kDtypes[p % 3], {300}, 40 + p);
    for (int i = 0; i < accepted[p]; ++i) ASSERT_TRUE(want.run(false, Context{1}).is_ok());
    EXPECT_EQ(dev[p]->var.read(), acl_test::host_bytes(want.var)) << accepted[p] << " accepted";
    EXPECT_EQ(dev[p]->m.read(), acl_test::host_bytes(want.m));
  }
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM);  // gone
  recent_error();
  EXPECT_EQ(acl::live_executors(), 0u);
}

TEST_F(ConcurrencyAcl, ConcurrentPhaseOneLaunchAndDestroy) {
  // For every operator (through its C API binding): executors created, launched, destroyed and misused
  // (second launch, second destroy) from many threads at once. The registry stays consistent and every
  // misuse is reported to the thread that made it.
  constexpr int kThreads = 6, kIters = 20;
  for (const ops::OpDesc* d : ops::all_ops()) {
    SCOPED_TRACE(d->name);
    ops::ProblemSpec spec;
    spec.shape = d->test_shapes.back();
    spec.attrs = d->attrs_for(spec.shape);
    const ops::Problem p = d->make_problem(spec);
    std::vector<int> bad(kThreads, 0);
    on_threads(kThreads, [&](int w) {
      // Each thread its own device copies (outputs and in-place arguments are written).
      std::vector<std::unique_ptr<DevTensor>> dev;
      ops::AclCall c;
      for (const HostBuffer& b : p.t) {
        dev.push_back(std::make_unique<DevTensor>(b));
        c.t.push_back(*dev.back());
      }
      std::vector<std::vector<int64_t>> shapes;
      for (const HostBuffer& b : p.t) shapes.push_back(b.shape());
      d->acl->defaults(shapes, p.attrs, &c);
      for (int i = 0; i < kIters; ++i) {
        uint64_t ws = 0;
        aclOpExecutor* e = nullptr;
        if (d->acl->phase_one(c, &ws, &e) != ACLNN_SUCCESS) {
          ++bad[w];
          recent_error();
          continue;
        }
        if ((i + w) % 3 == 0) {
          bad[w] += aclDestroyAclOpExecutor(e) == ACLNN_SUCCESS ? 0 : 1;
          bad[w] += aclDestroyAclOpExecutor(e) == ACLNN_ERR_PARAM_INVALID ? 0 : 1;  // already destroyed
        } else {
          std::vector<unsigned char> work(ws + 64);
          void* wp = ws ? work.data() + (64 - reinterpret_cast<uintptr_t>(work.data()) % 64) % 64 : nullptr;
          bad[w] += d->acl->phase_two(wp, ws, e, nullptr) == ACLNN_SUCCESS ? 0 : 1;
          bad[w] += d->acl->phase_two(wp, ws, e, nullptr) == ACLNN_ERR_PARAM_INVALID ? 0 : 1;  // ran once
        }
        bad[w] += recent_error().find("executor") != std::string::npos ? 0 : 1;
      }
    });
    for (int b : bad) EXPECT_EQ(b, 0);
    EXPECT_EQ(acl::live_executors(), 0u);
  }
}

}  // namespace
}  // namespace nnops
