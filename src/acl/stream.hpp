// A stream of the host device: an in-order task queue served by one worker thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "acl/acl_base.h"

namespace nnops::acl {

/// How a task ended: code ACL_SUCCESS, or the aclError that aclrtSynchronizeStream reports with the message.
struct TaskError {
  aclError code = ACL_SUCCESS;
  std::string message;
  bool ok() const { return code == ACL_SUCCESS; }
};

/// A unit of work. Runs on the worker; must not synchronize or destroy its own stream.
using Task = std::function<TaskError()>;

class Stream {
 public:
  /// Starts the worker; throws std::system_error when no thread can be created.
  Stream();
  /// Same as shutdown().
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// Appends a task; false once shutdown() has begun (the task is then destroyed unrun).
  bool enqueue(Task task);

  /// Waits for every task enqueued before the call; returns the first failure since the last report
  /// (later failures are counted in its message) and clears it.
  TaskError synchronize();

  /// Stops accepting tasks, lets the worker finish the queue, joins it and returns the unreported
  /// failure, if any. Idempotent.
  TaskError shutdown();

 private:
  void worker_loop();
  TaskError take_error_locked();

  std::mutex mu_;
  std::condition_variable work_cv_;  // the worker waits for tasks
  std::condition_variable done_cv_;  // synchronize() waits for completions
  std::deque<Task> queue_;
  uint64_t enqueued_ = 0;
  bool stopping_ = false;
  // Written under mu_; atomic so that synchronize() can poll it before it blocks, on a cache line of its own
  // (the host writes the queue and enqueued_ while the worker publishes completions).
  alignas(64) std::atomic<uint64_t> completed_{0};
  alignas(64) TaskError error_;
  int later_failures_ = 0;
  std::thread worker_;  // last member: started once everything above is initialized
};

}  // namespace nnops::acl
