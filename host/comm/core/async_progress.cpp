#include "comm/core/async_progress.hpp"

namespace gradsweep::comm {
namespace {
thread_local AsyncProgress::Issuing* issuing_here = nullptr;  // the innermost Issuing on this thread
}  // namespace

void AsyncProgress::started() const {
  for (const auto& l : listeners_) l->started();
}

void AsyncProgress::finished(bool ok) const {
  for (const auto& l : listeners_) l->finished(ok);
}

AsyncProgress AsyncProgress::claim() {
  AsyncProgress progress;
  for (Issuing* i = issuing_here; i != nullptr; i = i->outer_) {
    if (i->claimed_) continue;
    i->claimed_ = true;
    progress.listeners_.push_back(i->listener_);
  }
  return progress;
}

AsyncProgress::Issuing::Issuing(std::shared_ptr<Listener> listener)
    : listener_(std::move(listener)), outer_(issuing_here) {
  issuing_here = this;
}

AsyncProgress::Issuing::~Issuing() { issuing_here = outer_; }

}  // namespace gradsweep::comm
