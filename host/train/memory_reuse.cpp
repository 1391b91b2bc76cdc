#include "train/memory_reuse.hpp"

#include "env/environment.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gradsweep::train {

bool keep_freed_memory() {
#if defined(__GLIBC__)
  for (const char* tuned : {"GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"})
    if (env::raw(tuned).has_value()) return false;
  // Blocks up to 1 GiB come from the heap and stay there; a larger one (rare on a CPU) is still a mapping
  // of its own. -1: never trim the heap.
  constexpr int kMmapThreshold = 1 << 30;
  return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1;
#else
  return false;
#endif
}

}  // namespace gradsweep::train
