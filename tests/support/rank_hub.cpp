#include "support/rank_hub.hpp"

#include "support/collective_arithmetic.hpp"

#include <algorithm>

namespace gradsweep::test {
namespace {

const char* channel_name(Channel channel) { return channel == Channel::Async ? "async call" : "call"; }

}  // namespace

RankHub::RankHub(int size, std::chrono::milliseconds timeout)
    : size_(size),
      timeout_(timeout),
      waiting_(static_cast<std::size_t>(size)),
      finished_(static_cast<std::size_t>(size), false) {
  Context world;
  for (int r = 0; r < size; ++r) world.members.push_back(r);
  contexts_.push_back(std::move(world));
}

int RankHub::context(int parent, std::uint64_t split, int color, const std::vector<int>& members,
                     const std::string& name) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto [it, made] = context_ids_.try_emplace({parent, split, color}, static_cast<int>(contexts_.size()));
  if (made) contexts_.push_back({name, members});
  return it->second;
}

std::shared_ptr<PendingCollective> RankHub::join(int context, int member, int rank, Channel channel,
                                                 CollectiveCall call) {
  Lock lock(mutex_);
  check_failed(rank, call.what);
  const int c = static_cast<int>(channel);
  const Context& ctx = contexts_.at(static_cast<std::size_t>(context));
  const int size = static_cast<int>(ctx.members.size());
  const std::uint64_t number = next_[{context, rank}][c]++;
  std::shared_ptr<PendingCollective>& slot = open_[{context, c, number}];
  if (!slot) {
    slot = std::make_shared<PendingCollective>();
    slot->name = (ctx.name.empty() ? "" : ctx.name + " ") + channel_name(channel) + " #" + std::to_string(number);
    slot->context = context;
    slot->calls.resize(static_cast<std::size_t>(size));
  }
  std::shared_ptr<PendingCollective> pending = slot;
  pending->calls[static_cast<std::size_t>(member)] = std::move(call);
  if (++pending->joined == size) {
    open_.erase({context, c, number});
    run(*pending);
    changed_.notify_all();
  }
  return pending;
}

// Every rank's tensors are read before any is written, so in-place and aliased layouts (a rank's input
// that is its own slot of the output) behave as the MPI backend promises.
void RankHub::run(PendingCollective& pending) {
  std::vector<CollectiveCall> calls;
  for (auto& c : pending.calls) calls.push_back(*c);
  pending.error = mismatch(calls);
  if (pending.error.empty()) {
    try {
      carry_out(calls);
    } catch (const std::exception& e) {
      pending.error = e.what();
    }
  }
  if (!pending.error.empty()) pending.error = pending.name + ": " + pending.error;
  for (auto& c : pending.calls) c.reset();  // the tensors are no longer held
  pending.done = true;
}

void RankHub::wait(int rank, const PendingCollective& pending, const std::string& what) {
  Lock lock(mutex_);
  block(lock, rank, what + " (" + pending.name + ")", [&] { return pending.done; });
  if (!pending.error.empty()) throw std::runtime_error(pending.error);
}

void RankHub::post(int context, int source, int source_rank, int dest, int tag, torch::Tensor payload) {
  const std::lock_guard<std::mutex> lock(mutex_);
  check_failed(source_rank, "send to rank " + std::to_string(dest));
  mailboxes_[{context, dest}].push_back({source, tag, std::move(payload)});
  changed_.notify_all();
}

Message RankHub::take(int context, int rank, int source, int tag, const std::string& what) {
  Lock lock(mutex_);
  std::deque<Message>& box = mailboxes_[{context, rank}];
  const auto match = [&] {
    return std::find_if(box.begin(), box.end(), [&](const Message& m) {
      return m.tag == tag && (source == sdk::kAnySource || m.source == source);
    });
  };
  block(lock, rank, what, [&] { return match() != box.end(); });
  const auto it = match();
  Message message = std::move(*it);
  box.erase(it);
  return message;
}

void RankHub::fail(int rank, const std::string& message) {
  const std::lock_guard<std::mutex> lock(mutex_);
  fail_locked(rank, message);
}

void RankHub::fail_locked(int rank, const std::string& message) {
  if (!failure_) failure_ = HubFailure{rank, message};
  changed_.notify_all();
}

void RankHub::finished(int rank) {
  const std::lock_guard<std::mutex> lock(mutex_);
  finished_[rank] = true;
  changed_.notify_all();  // a rank waiting for this one is now deadlocked: let it see that
}

std::optional<HubFailure> RankHub::failure() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

// Ranks are named by their world rank, whatever context the collective is in.
std::string RankHub::unfinished() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::string text;
  for (const auto& [key, pending] : open_) {
    const std::vector<int>& members = contexts_.at(static_cast<std::size_t>(pending->context)).members;
    std::string joined, missing, what;
    for (std::size_t m = 0; m < members.size(); ++m) {
      const auto& call = pending->calls[m];
      (call ? joined : missing) += " " + std::to_string(members[m]);
      if (call && what.empty()) what = call->what;
    }
    text += (text.empty() ? "" : "; ") + pending->name + " (" + what + ") joined by rank(s)" + joined +
            ", never by rank(s)" + missing;
  }
  return text;
}

void RankHub::check_failed(int rank, const std::string& what) const {
  if (!failure_) return;
  const std::string head = what + " on rank " + std::to_string(rank) + ": ";
  if (failure_->rank >= 0)
    throw RunAborted(head + "rank " + std::to_string(failure_->rank) + " failed: " + failure_->message);
  throw RunAborted(head + failure_->message);
}

// A rank that is done waiting (ready) leaves at once; one that is not registers what it waits for, so
// that the rank which completes the picture of a deadlock can describe it.
void RankHub::block(Lock& lock, int rank, const std::string& what, const std::function<bool()>& ready) {
  if (ready()) return;
  // The deadlock check takes a rank whose thread waits to be a rank that waits: a second thread of the
  // same rank could be the one to unblock it, so such use is refused rather than misjudged.
  if (waiting_[rank])
    throw std::logic_error(what + " on rank " + std::to_string(rank) + ": another thread of this rank waits in " +
                           waiting_[rank]->what + "; the thread-ranks harness takes one calling thread per rank");
  waiting_[rank] = Waiter{what, ready};
  struct Leave {
    std::optional<Waiter>& slot;
    ~Leave() { slot.reset(); }
  } leave{waiting_[rank]};
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (!ready()) {
    check_failed(rank, what);
    if (deadlocked()) {
      fail_locked(-1, "deadlock: every rank still running waits for something no rank will provide: " + who_waits());
      check_failed(rank, what);
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !ready()) {
      fail_locked(-1, "rank " + std::to_string(rank) + " waited " +
                          std::to_string(timeout_.count() / 1000.0).substr(0, 5) +
                          " s in one call (RanksOptions::timeout, the harness's safety net): " + who_waits());
      check_failed(rank, what);
    }
  }
}

bool RankHub::deadlocked() const {
  for (int r = 0; r < size_; ++r) {
    if (finished_[r]) continue;
    if (!waiting_[r] || waiting_[r]->ready()) return false;
  }
  return true;
}

std::string RankHub::who_waits() const {
  std::string text;
  for (int r = 0; r < size_; ++r) {
    text += (r == 0 ? "" : "; ") + std::string("rank ") + std::to_string(r) + " ";
    if (finished_[r])
      text += "has returned";
    else if (waiting_[r])
      text += "waits in " + waiting_[r]->what;
    else
      text += "is running (in no communicator call)";
  }
  return text;
}

}  // namespace gradsweep::test
