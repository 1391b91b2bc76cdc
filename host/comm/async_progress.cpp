#include "comm/async_progress.hpp"

namespace gradsweep::comm {
namespace {
thread_local AsyncProgress::Issuing* issuing_here = nullptr;  // the innermost Issuing on this thread
}  // namespace

void AsyncProgress::started() const {
  if (recorder_ && id_ != 0) recorder_->start(id_);
}

void AsyncProgress::finished(bool ok) const {
  if (recorder_ && id_ != 0) recorder_->finish(id_, ok);
}

AsyncProgress AsyncProgress::claim() {
  if (issuing_here == nullptr || issuing_here->claimed_) return {};
  issuing_here->claimed_ = true;
  return issuing_here->progress_;
}

AsyncProgress::Issuing::Issuing(AsyncProgress progress) : progress_(std::move(progress)), outer_(issuing_here) {
  issuing_here = this;
}

AsyncProgress::Issuing::~Issuing() { issuing_here = outer_; }

}  // namespace gradsweep::comm
