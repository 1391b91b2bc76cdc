#pragma once
// A thread that runs queued operations one at a time, in the order they were submitted. The MPI
// backend runs its asynchronous collectives here, on a communicator of their own: Open MPI's
// non-blocking collectives only progress while the caller is inside MPI, so an MPI_Iallreduce started
// before backward would mostly run inside wait(); on this thread the operation runs while the caller
// computes. Every rank submits its async operations in the same order, so the FIFO keeps them matched.
#include <gradsweep/sdk/status.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace gradsweep::comm {

class AsyncWorker {
 public:
  // One submitted operation, shared by the queue and whoever waits for it.
  class Job {
   public:
    // Blocks until the operation has run; its status.
    sdk::Status wait();

   private:
    friend class AsyncWorker;
    std::function<sdk::Status()> body_;
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = false;
    sdk::Status status_;
  };

  AsyncWorker();
  // Runs everything still queued, then stops the thread.
  ~AsyncWorker();
  AsyncWorker(const AsyncWorker&) = delete;
  AsyncWorker& operator=(const AsyncWorker&) = delete;

  // Queues `body` (an exception it throws becomes its status). What the layers above count and record of
  // it, the body tells them itself (comm/core/async_progress.hpp).
  std::shared_ptr<Job> submit(std::function<sdk::Status()> body);

  // Blocks until every job submitted so far has finished.
  void drain();
  // Jobs submitted and not yet finished.
  std::size_t pending() const;

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;     // a job was queued, or stopping
  std::condition_variable drained_;  // the queue emptied
  std::deque<std::shared_ptr<Job>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gradsweep::comm
