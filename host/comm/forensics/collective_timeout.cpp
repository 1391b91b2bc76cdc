#include "comm/forensics/collective_timeout.hpp"

#include "env/environment.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>

namespace gradsweep::comm {

CollectiveTimeout::CollectiveTimeout(std::chrono::duration<double> limit, Expired on_expired, Tick on_tick)
    : limit_(limit), on_expired_(std::move(on_expired)), on_tick_(std::move(on_tick)) {
  if (limit_.count() > 0) thread_ = std::thread([this] { watch(); });
}

CollectiveTimeout::~CollectiveTimeout() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

CollectiveTimeout::Scope::Scope(CollectiveTimeout& owner, std::string what)
    : owner_(owner.thread_.joinable() ? &owner : nullptr) {
  if (owner_ == nullptr) return;
  const std::lock_guard<std::mutex> lock(owner_->mutex_);
  id_ = owner_->next_id_++;
  owner_->in_flight_.emplace(id_, Call{Clock::now(), std::move(what)});
}

CollectiveTimeout::Scope::~Scope() {
  if (owner_ == nullptr) return;
  const std::lock_guard<std::mutex> lock(owner_->mutex_);
  owner_->in_flight_.erase(id_);
}

// Sleeps until the oldest call in flight would be overdue (or a second, whichever is sooner, so that a
// call that starts while it sleeps is looked at in time), then checks again.
void CollectiveTimeout::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    const auto now = Clock::now();
    auto next = now + std::chrono::seconds(1);
    if (!in_flight_.empty()) {
      const Call& oldest = in_flight_.begin()->second;
      const std::chrono::duration<double> waited = now - oldest.start;
      if (waited >= limit_) {
        const std::string what = oldest.what;
        lock.unlock();
        on_expired_(what, waited.count());
        return;  // only reached if the handler chose not to end the process
      }
      next = std::min(next, oldest.start + std::chrono::duration_cast<Clock::duration>(limit_));
    }
    wake_.wait_until(lock, next);
    if (on_tick_ && !stopping_) {
      lock.unlock();
      on_tick_();
      lock.lock();
    }
  }
}

namespace {
std::atomic<double> configured_timeout{-1.0};  // < 0: not configured
}  // namespace

void set_configured_comm_timeout(double seconds) { configured_timeout = seconds; }

double comm_timeout_seconds(double fallback) {
  if (const auto seconds = env::non_negative_number("GRADSWEEP_COMM_TIMEOUT")) return *seconds;
  return configured_timeout >= 0 ? configured_timeout.load() : fallback;
}

}  // namespace gradsweep::comm
