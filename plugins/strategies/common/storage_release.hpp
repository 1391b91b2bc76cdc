#pragma once
// Frees and re-allocates a tensor's storage in place, as PyTorch FSDP does with `storage().resize_()`.
//
// The StorageImpl object itself stays: every tensor and view that shares it (a parameter, the views of it
// that autograd saved in forward) sees the new memory once it is re-allocated and refilled, and no
// version counter moves, so the saved tensors stay valid for backward. Reading a tensor while its storage
// is released is undefined: the caller keeps track.
#include <torch/types.h>

#include <c10/core/StorageImpl.h>

#include <cstddef>

namespace gradsweep::strategies {

inline void release_storage(const torch::Tensor& tensor) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(c10::DataPtr(nullptr, storage->device()));
  storage->set_nbytes(0);
}

// Gives the storage `nbytes` of fresh, uninitialised memory from its own allocator (the CUDA caching
// allocator on a GPU, so a re-allocation costs no cudaMalloc).
inline void reallocate_storage(const torch::Tensor& tensor, std::size_t nbytes) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(storage->allocator()->allocate(nbytes));
  storage->set_nbytes(nbytes);
}

inline std::size_t storage_bytes(const torch::Tensor& tensor) { return tensor.storage().nbytes(); }

}  // namespace gradsweep::strategies
