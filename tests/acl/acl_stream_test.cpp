// Streams: in-order execution, concurrency between streams, failures surfacing at synchronize.
//
// How can a task fail when phase one validated everything? On an NPU, by touching memory that was freed
// after the launch; here such a free is only recorded while a task still needs the block, and the task
// then fails cleanly instead of computing. That is tested through the public API. Ordering and
// concurrency are observed with the internal hook nnops::acl::testing::enqueue, which queues arbitrary
// tasks (e.g. one that blocks the stream until the test releases it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <thread>
#include <vector>

#include "aclnn_inplace_apply_power_sign.h"
#include "nnops/ops/inplace_apply_power_sign.hpp"
#include "src/acl/device_memory.hpp"
#include "src/acl/runtime.hpp"
#include "src/core/parallel.hpp"
#include "tests/acl/acl_test_util.hpp"
#include "tests/test_util.hpp"

namespace nnops::acl_test {
namespace {

using detail::HostBuffer;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

using AclStream = AclTest;

// A task that holds its stream until release() (or a 10 s safety timeout, so a broken test cannot hang).
class Blocker {
 public:
  acl::Task task() {
    return [this] {
      started_.set_value();
      gate_.wait_for(10s);
      return acl::TaskError{};
    };
  }
  void wait_started() { ASSERT_EQ(started_future_.wait_for(10s), std::future_status::ready); }
  void release() { open_.set_value(); }

 private:
  std::promise<void> started_, open_;
  std::future<void> started_future_ = started_.get_future();
  std::shared_future<void> gate_ = open_.get_future().share();
};

TEST_F(AclStream, TasksRunInLaunchOrder) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  std::vector<int> seen;  // written by the worker only, read after synchronize
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(acl::testing::enqueue(s, [&seen, i] {
      seen.push_back(i);
      return acl::TaskError{};
    }));
  }
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  ASSERT_EQ(seen.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(seen[i], i);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(AclStream, OptimizerStepsOnOneStreamMatchSequentialCppCalls) {
  // m = beta*m + (1-beta)*grad_k depends on the order of the steps: any reordering changes the bits.
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  const DType t = DType::kFloat32;
  const std::vector<int64_t> shape = {257};
  HostBuffer var(t, shape), m(t, shape), lr(t, {1}), lb(t, {1}), sd(t, {1}), beta(t, {1});
  std::mt19937_64 rng(5);
  testing::fill_random(var, rng);
  testing::fill_random(m, rng);
  lr.set(0, 0.05), lb.set(0, 0.7), sd.set(0, 0.9), beta.set(0, 0.6);
  constexpr int kSteps = 8;
  std::vector<HostBuffer> grads;
  for (int k = 0; k < kSteps; ++k) {
    grads.emplace_back(t, shape);
    testing::fill_random(grads.back(), rng);
  }
  DevTensor dvar(var), dm(m), dlr(lr), dlb(lb), dsd(sd), dbeta(beta);
  std::vector<std::unique_ptr<DevTensor>> dgrads;
  for (const HostBuffer& g : grads) dgrads.push_back(std::make_unique<DevTensor>(g));
  for (int k = 0; k < kSteps; ++k) {
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(aclnnInplaceApplyPowerSignGetWorkspaceSize(dvar, dm, dlr, dlb, dsd, dbeta, *dgrads[k], false, &ws, &e),
              ACLNN_SUCCESS);
    ASSERT_EQ(aclnnInplaceApplyPowerSign(nullptr, 0, e, s), ACLNN_SUCCESS);
  }
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS) << recent_error();
  for (int k = 0; k < kSteps; ++k) {
    ASSERT_TRUE(
        inplace_apply_power_sign(var.view(), m.view(), lr.view(), lb.view(), sd.view(), beta.view(), grads[k].view()));
  }
  EXPECT_EQ(dvar.read(), host_bytes(var));
  EXPECT_EQ(dm.read(), host_bytes(m));
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(AclStream, OnlyThePoolDoingTheWorkStaysAlive) {
  // detail::release_thread_pool: a launch onto a stream releases the launching thread's OpenMP pool, and the
  // worker releases its own once idle (both come back with the next parallel region).
  std::atomic<int> ran{0};
  detail::parallel_region(2, [&](int, int) { ran++; });
  ASSERT_TRUE(detail::t_owns_thread_pool);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  const DType t = DType::kFloat32;
  const std::vector<int64_t> shape = {1 << 17};  // above the thread grain: 2 threads where there are 2 cores
  HostBuffer var(t, shape), m(t, shape), g(t, shape), lr(t, {1}), lb(t, {1}), sd(t, {1}), beta(t, {1});
  std::mt19937_64 rng(6);
  testing::fill_random(var, rng);
  testing::fill_random(m, rng);
  testing::fill_random(g, rng);
  lr.set(0, 0.05), lb.set(0, 0.7), sd.set(0, 0.9), beta.set(0, 0.6);
  DevTensor dvar(var), dm(m), dg(g), dlr(lr), dlb(lb), dsd(sd), dbeta(beta);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(aclnnInplaceApplyPowerSignGetWorkspaceSize(dvar, dm, dlr, dlb, dsd, dbeta, dg, false, &ws, &e),
            ACLNN_SUCCESS);
  ASSERT_EQ(aclnnInplaceApplyPowerSign(nullptr, 0, e, s), ACLNN_SUCCESS);
  EXPECT_FALSE(detail::t_owns_thread_pool);  // released by the launch
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS) << recent_error();
  ASSERT_TRUE(inplace_apply_power_sign(var.view(), m.view(), lr.view(), lb.view(), sd.view(), beta.view(), g.view()));
  EXPECT_EQ(dvar.read(), host_bytes(var));
  EXPECT_EQ(dm.read(), host_bytes(m));
  // The worker: owns a pool right after a 2-thread region, not after it has been idle for a while.
  bool after_region = false, after_idle = true;
  ASSERT_TRUE(acl::testing::enqueue(s, [&] {
    detail::parallel_region(2, [](int, int) {});
    after_region = detail::t_owns_thread_pool;
    return acl::TaskError{};
  }));
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(acl::testing::enqueue(s, [&] {
    after_idle = detail::t_owns_thread_pool;
    return acl::TaskError{};
  }));
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_TRUE(after_region);
  EXPECT_FALSE(after_idle);
  // This thread's next region starts a pool again and gets its threads.
  ran = 0;
  int granted = 0;
  detail::parallel_region(2, [&](int tid, int nt) {
    ran++;
    if (tid == 0) granted = nt;
  });
  EXPECT_EQ(ran.load(), granted);
  EXPECT_TRUE(detail::t_owns_thread_pool);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(AclStream, TwoStreamsRunConcurrently) {
  // Each stream's task waits until the other's has started: only concurrent streams get both through.
  aclrtStream a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
  std::promise<void> a_started, b_started;
  std::shared_future<void> a_f = a_started.get_future().share(), b_f = b_started.get_future().share();
  std::atomic<bool> a_saw_b{false}, b_saw_a{false};
  ASSERT_TRUE(acl::testing::enqueue(a, [&] {
    a_started.set_value();
    a_saw_b = b_f.wait_for(10s) == std::future_status::ready;
    return acl::TaskError{};
  }));
  ASSERT_TRUE(acl::testing::enqueue(b, [&] {
    b_started.set_value();
    b_saw_a = a_f.wait_for(10s) == std::future_status::ready;
    return acl::TaskError{};
  }));
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
  EXPECT_TRUE(a_saw_b);
  EXPECT_TRUE(b_saw_a);
  EXPECT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
}

TEST_F(AclStream, LaunchReturnsBeforeTheTaskRunsAndSynchronizeWaits) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  Blocker blocker;
  ASSERT_TRUE(acl::testing::enqueue(s, blocker.task()));
  float v[4] = {1, 2, 3, 4}, m[4] = {}, g[4] = {1, 1, 1, 1}, sc[4] = {0.5f, 1, 1, 0.5f};
  const int64_t four[] = {4}, one[] = {1};
  aclTensor* tv = aclCreateTensor(four, 1, ACL_FLOAT, one, 0, ACL_FORMAT_ND, four, 1, v);
  aclTensor* tm = aclCreateTensor(four, 1, ACL_FLOAT, one, 0, ACL_FORMAT_ND, four, 1, m);
  aclTensor* tg = aclCreateTensor(four, 1, ACL_FLOAT, one, 0, ACL_FORMAT_ND, four, 1, g);
  aclTensor* ts[4];
  for (int i = 0; i < 4; ++i) ts[i] = aclCreateTensor(one, 1, ACL_FLOAT, one, 0, ACL_FORMAT_ND, one, 1, &sc[i]);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(aclnnInplaceApplyPowerSignGetWorkspaceSize(tv, tm, ts[0], ts[1], ts[2], ts[3], tg, false, &ws, &e),
            ACLNN_SUCCESS);
  for (aclTensor* t : {tv, tm, tg, ts[0], ts[1], ts[2], ts[3]}) aclDestroyTensor(t);  // the executor has copies
  ASSERT_EQ(aclnnInplaceApplyPowerSign(nullptr, 0, e, s), ACLNN_SUCCESS);
  blocker.wait_started();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(v[0], 1.0f);  // queued behind the blocker: not run yet
  blocker.release();
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_NE(v[0], 1.0f);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(AclStream, MemoryFreedBeforeTheTaskRunsFailsAtSynchronize) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  HostBuffer hv(DType::kFloat32, {64}), hm(DType::kFloat32, {64}), hg(DType::kFloat32, {64});
  HostBuffer hlr(DType::kFloat32, {1}), hb(DType::kFloat32, {1});
  std::mt19937_64 rng(1);
  testing::fill_random(hv, rng), testing::fill_random(hm, rng), testing::fill_random(hg, rng);
  hlr.set(0, 0.1), hb.set(0, 0.5);
  DevTensor var(hv), m(hm), grad(hg), lr(hlr), lb(hlr), sd(hlr), beta(hb);
  const std::size_t blocks_before = acl::memory().live_blocks();

  Blocker blocker;
  ASSERT_TRUE(acl::testing::enqueue(s, blocker.task()));
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(aclnnInplaceApplyPowerSignGetWorkspaceSize(var, m, lr, lb, sd, beta, grad, false, &ws, &e), ACLNN_SUCCESS);
  ASSERT_EQ(aclnnInplaceApplyPowerSign(nullptr, 0, e, s), ACLNN_SUCCESS);
  var.free_block();  // succeeds: the queued task still holds the block, which is only marked freed
  EXPECT_EQ(acl::memory().live_blocks(), blocks_before - 1);
  blocker.release();

  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_THAT(recent_error(), HasSubstr("aclrtSynchronizeStream: aclnnInplaceApplyPowerSign: the device memory of "
                                        "varRef (256 bytes at 0x"));
  EXPECT_EQ(m.read(), host_bytes(hm));                // nothing was computed
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);  // reported once
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(AclStream, FailuresAreReportedToTheSynchronizingThreadOnce) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(acl::testing::enqueue(s, [i] {
      return acl::TaskError{ACL_ERROR_RT_AICORE_EXCEPTION, "task " + std::to_string(i)};
    }));
  }
  ASSERT_TRUE(acl::testing::enqueue(s, []() -> acl::TaskError { throw std::runtime_error("boom"); }));
  std::string message;
  aclError code = ACL_SUCCESS;
  std::thread([&] {
    code = aclrtSynchronizeStream(s);
    message = recent_error();
  }).join();
  EXPECT_EQ(code, ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_EQ(message, "aclrtSynchronizeStream: task 0; 3 later task(s) on this stream failed too");
  EXPECT_EQ(recent_error(), "");  // not this thread's failure
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(AclStream, DestroyWaitsForTasksAndReportsUnsynchronizedFailures) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  std::atomic<bool> ran{false};
  ASSERT_TRUE(acl::testing::enqueue(s, [&] {
    std::this_thread::sleep_for(20ms);
    ran = true;
    return acl::TaskError{ACL_ERROR_RT_AICORE_EXCEPTION, "late failure"};
  }));
  EXPECT_EQ(aclrtDestroyStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_TRUE(ran);
  EXPECT_THAT(recent_error(), HasSubstr("aclrtDestroyStream: late failure"));
  EXPECT_EQ(aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM);  // gone, whatever the return above
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_FALSE(acl::testing::enqueue(s, [] { return acl::TaskError{}; }));
  recent_error();
}

TEST_F(AclStream, SynchronizeDeviceAndResetCoverEveryStream) {
  aclrtStream a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
  ASSERT_TRUE(acl::testing::enqueue(a, [] { return acl::TaskError{ACL_ERROR_RT_AICORE_EXCEPTION, "on a"}; }));
  ASSERT_TRUE(acl::testing::enqueue(b, [] { return acl::TaskError{ACL_ERROR_RT_AICORE_EXCEPTION, "on b"}; }));
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_ERROR_RT_AICORE_EXCEPTION);
  const std::string both = recent_error();
  EXPECT_THAT(both, HasSubstr("on a"));
  EXPECT_THAT(both, HasSubstr("on b"));
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);

  // The last aclrtResetDevice releases the streams still alive.
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(a), ACL_ERROR_INVALID_PARAM);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  recent_error();
}

}  // namespace
}  // namespace nnops::acl_test
