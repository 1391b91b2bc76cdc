// The key of a BPE merge table: the pair (left id, right id) as one 64-bit integer, left in the high half.
// Shared by the GPT-2 encoder.py merge loop (tokenizer_bpe.cpp) and tokenizers' queue (hf_bpe_model.cpp).
#pragma once

#include <cstdint>

namespace gradsweep::data {

inline uint64_t merge_pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace gradsweep::data
