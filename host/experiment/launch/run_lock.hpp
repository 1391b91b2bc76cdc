#pragma once
// One `gradsweep run` per output directory: two drivers would launch the same cells twice and write the
// same files. DIR/.lock is held with flock for the driver's lifetime; the kernel drops it when the
// process ends, however it ends, so a crashed driver never leaves a stale lock behind.
#include <filesystem>

namespace gradsweep::experiment {

class RunLock {
 public:
  // Takes the lock or throws std::runtime_error naming the pid that holds it. Creates DIR if needed.
  explicit RunLock(const std::filesystem::path& out_dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace gradsweep::experiment
