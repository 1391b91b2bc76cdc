#pragma once
// How the layers of the communicator stack (comm/layers/communicator_stack.hpp) learn when the backend really runs an
// async call. A layer sees an async call only at issue and at its request's wait; a backend that queues the
// call for a worker (the MPI backend, comm/core/async_worker.hpp) knows when it starts and ends there. That is what
// the recorder's timeline draws and its hang verdict counts as finished, and what the counting layer counts as
// busy. Each layer that wants to know names a listener on its own thread while it issues the call (Issuing);
// the backend, issuing on that thread, claims them all (claim()) and tells them from its worker. A listener
// nobody claims stays with its layer, which then counts the call as running from issue until it is waited for.
#include <memory>
#include <vector>

namespace gradsweep::comm {

class AsyncProgress {
 public:
  // What one layer is told of one call, from the backend's worker thread.
  class Listener {
   public:
    virtual ~Listener() = default;
    virtual void started() = 0;
    virtual void finished(bool ok) = 0;
  };

  AsyncProgress() = default;

  // Tells every listener; nothing for an empty progress.
  void started() const;
  void finished(bool ok) const;

  // The listeners named on this thread by the layers issuing the call, now the caller's to tell; empty when
  // no layer names one (a bare backend, or a call not issued through the stack).
  static AsyncProgress claim();

  // For a layer: names a listener on this thread while it lives (below).
  class Issuing;

 private:
  std::vector<std::shared_ptr<Listener>> listeners_;
};

// Names `listener` on this thread while it lives (the layers below and the backend's call run inside).
class AsyncProgress::Issuing {
 public:
  explicit Issuing(std::shared_ptr<Listener> listener);
  ~Issuing();
  Issuing(const Issuing&) = delete;
  Issuing& operator=(const Issuing&) = delete;
  // Whether the backend claimed the listener.
  bool claimed() const { return claimed_; }

 private:
  friend class AsyncProgress;
  std::shared_ptr<Listener> listener_;
  Issuing* outer_;
  bool claimed_ = false;
};

}  // namespace gradsweep::comm
