#pragma once
// Keeping freed memory in the rank's process from one training step to the next.
//
// With glibc's defaults, malloc hands memory back to the kernel between steps: a block above
// M_MMAP_THRESHOLD is a mapping of its own, unmapped when freed, and free memory at the top of the heap
// above M_TRIM_THRESHOLD is trimmed. A step frees its activations and its gradients' temporaries and
// allocates the same sizes again in the next one, so every step faulted in and zeroed tens of MB of new
// pages: 8,100 minor faults and 12-14 ms of kernel time per step of gpt2-small-cpu (batch 16) on one
// rank, where the same model in PyTorch eager had 2,800 (docs/measurements/single-rank.md). Fixed
// thresholds keep the memory for reuse, as a caching allocator does on a GPU: 0 faults per step.
namespace gradsweep::train {

// Called once by a rank before it builds the model. Leaves malloc alone where the user tuned it
// (GLIBC_TUNABLES, MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ set) and where the C library is not
// glibc. Returns whether it set the thresholds.
bool keep_freed_memory();

}  // namespace gradsweep::train
