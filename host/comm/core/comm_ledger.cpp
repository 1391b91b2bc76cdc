#include "comm/core/comm_ledger.hpp"

#include <utility>

namespace gradsweep::comm {

namespace {
thread_local int uncounted_depth = 0;
}  // namespace

CommLedger::Uncounted::Uncounted() { ++uncounted_depth; }
CommLedger::Uncounted::~Uncounted() { --uncounted_depth; }

CommLedger::CommLedger(std::shared_ptr<CommLedger> parent, std::string name)
    : parent_(std::move(parent)), name_(std::move(name)) {}

void CommLedger::add(const CommStats& delta) {
  if (uncounted_depth > 0) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    totals_ += delta;
  }
  if (parent_) parent_->add_from_group(name_, delta);
}

// A group's delta: in the parent's totals and under the group's name, then on up (a group of a group
// counts in the grandparent under the middle group's name).
void CommLedger::add_from_group(const std::string& name, const CommStats& delta) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    totals_ += delta;
    groups_[name] += delta;
  }
  if (parent_) parent_->add_from_group(name_, delta);
}

CommStats CommLedger::take() {
  const std::lock_guard<std::mutex> lock(mutex_);
  taken_ = std::exchange(groups_, {});
  return std::exchange(totals_, {});
}

GroupStats CommLedger::take_groups() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(taken_, {});
}

double CommLedger::blocked_so_far() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return totals_.blocked_seconds;
}

void CommLedger::close() {
  const std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
}

bool CommLedger::closed() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

bool CommLedger::parent_gone() const { return parent_ && (parent_->closed() || parent_->parent_gone()); }

}  // namespace gradsweep::comm
