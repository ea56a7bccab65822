#include "src/acl/stream.hpp"

#include <chrono>
#include <exception>
#include <utility>

#include "src/core/parallel.hpp"

namespace nnops::acl {
namespace {

// NB: why synchronize() polls before it blocks. A condition-variable wake-up (a futex) took tens of
// microseconds on the 2-core VM: launch + aclrtSynchronizeStream of a 4096-element PowerSign cost 66 us a call,
// against 4 us a call for 161 launches and one synchronize. Polling the completion count for up to kPoll
// first brought the pair to 21 us (the worker's own wake-up is the rest). The worker does not poll for tasks:
// that halved the wake-up cost again (9 us) but doubled the cost of back-to-back launches (4 -> 8.5 us a
// call), the host and the worker then trading the queue's cache lines task by task. The poll yields the core
// on every turn, so a runnable kernel thread goes first.
constexpr auto kPoll = std::chrono::microseconds(50);

// How long the worker waits for the next task before it releases its OpenMP pool: longer than the gaps between
// the launches of one step (a few microseconds), short against the pool's restart (~40 us) repaid by whoever
// runs parallel regions meanwhile.
constexpr auto kIdleRelease = std::chrono::milliseconds(2);

template <class Done>
void poll_until(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kPoll;
  while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
}

}  // namespace

Stream::Stream() : worker_([this] { worker_loop(); }) {}

Stream::~Stream() { shutdown(); }

bool Stream::enqueue(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    queue_.push_back(std::move(task));
    ++enqueued_;
  }
  work_cv_.notify_one();
  return true;
}

TaskError Stream::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = enqueued_;
  if (completed_ < target) {
    lock.unlock();
    poll_until([&] { return completed_.load(std::memory_order_acquire) >= target; });
    lock.lock();
    done_cv_.wait(lock, [&] { return completed_ >= target; });
  }
  return take_error_locked();
}

TaskError Stream::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_one();
  if (worker_.joinable()) worker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return take_error_locked();
}

TaskError Stream::take_error_locked() {
  TaskError e = std::move(error_);
  error_ = TaskError{};
  if (later_failures_ > 0) {
    e.message += "; " + std::to_string(later_failures_) + " later task(s) on this stream failed too";
    later_failures_ = 0;
  }
  return e;
}

void Stream::worker_loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const auto ready = [&] { return stopping_ || !queue_.empty(); };
      if (!work_cv_.wait_for(lock, kIdleRelease, ready)) {
        // Idle: its OpenMP pool would slow every other thread's parallel regions (detail::release_thread_pool).
        lock.unlock();
        detail::release_thread_pool();
        lock.lock();
        work_cv_.wait(lock, ready);
      }
      if (queue_.empty()) return;  // stopping, and every task has run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    TaskError e;
    try {
      e = task();
    } catch (const std::exception& ex) {
      e = TaskError{ACL_ERROR_RT_INTERNAL_ERROR, std::string("a task threw: ") + ex.what()};
    } catch (...) {
      e = TaskError{ACL_ERROR_RT_INTERNAL_ERROR, "a task threw an unknown exception"};
    }
    // The task (and what it captured: pins on device memory) is released before the completion is
    // published, so a synchronized caller may free that memory at once.
    task = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!e.ok()) {
        if (error_.ok()) {
          error_ = std::move(e);
        } else {
          ++later_failures_;
        }
      }
      ++completed_;
    }
    done_cv_.notify_all();
  }
}

}  // namespace nnops::acl
