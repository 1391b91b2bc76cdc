#include "comm/core/async_worker.hpp"

namespace gradsweep::comm {

sdk::Status AsyncWorker::Job::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [this] { return done_; });
  return status_;
}

AsyncWorker::AsyncWorker() : thread_([this] { run(); }) {}

AsyncWorker::~AsyncWorker() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();  // run() empties the queue before it returns
}

std::shared_ptr<AsyncWorker::Job> AsyncWorker::submit(std::function<sdk::Status()> body) {
  auto job = std::make_shared<Job>();
  job->body_ = std::move(body);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(job);
  }
  wake_.notify_one();
  return job;
}

void AsyncWorker::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  drained_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

std::size_t AsyncWorker::pending() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + (busy_ ? 1 : 0);
}

void AsyncWorker::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();

    sdk::Status status;
    const sdk::Status thrown = sdk::guard([&] { status = job->body_(); });
    if (!thrown.ok) status = thrown;
    {
      const std::lock_guard<std::mutex> job_lock(job->mutex_);
      job->status_ = std::move(status);
      job->done_ = true;
      job->body_ = nullptr;  // releases what the operation held (its tensor) now, not when the waiter goes
    }
    job->done_cv_.notify_all();

    lock.lock();
    busy_ = false;
    if (queue_.empty()) drained_.notify_all();
  }
}

}  // namespace gradsweep::comm
